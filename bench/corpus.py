"""Synthetic memories that vary the way an assistant's notes about a person's life and work do.

The first core benchmark built its vaults from 8 sentence shapes with fixed wording. At 10,000
memories 26 % of random 3-word queries were then wording shared by hundreds of memories
(1,310 held "project scheduled week"), so no ranking could pick the target out: the best
possible top-10 hit rate was 0.80. Real memories are written afresh each time; what they
share is a topic, not a sentence. Here every part of a memory is drawn from a pool: the
frame (who said what about which area of life), its verb and connective phrases, and the
specifics (names, places, products, dishes, codenames, numbers). `bench_core.py` measures
the ceiling on whatever corpus it builds, so the ranking's share of it stays visible.

    python -c "import random, corpus; print(corpus.memory(random.Random(1)))"
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from collections.abc import Callable
from typing import Any

FIRST = ("Alice Bob Carol Dmitri Emeka Fatima Grace Hiro Ines Jonas Kavya Liam Mei Noor Olga Pedro Quinn "
         "Rosa Sven Tariq Uma Viktor Wen Ximena Yusuf Zoë Amara Bruno Chiara Dev Elif Farid Greta Hana Ivan "
         "Jade Kofi Lena Mateo Nadia Oscar Priya Rafael Sofia Tomas Ugo Vera Will Xavier Yara Zane Aiko Bilal "
         "Cleo Dario Esme Felix Gus Hugo Iris Joaquín Keiko Lars Magnus Nia Omar Paloma Rahul Saoirse Tobias "
         "Valentina Wanjiru Yosef Ayla Benedikt Camille Desmond Eero Freya Gideon Hollis Ilse Jarrah").split()
SURNAMES = ("Okafor Lindqvist Tanaka Moreau Haddad Kowalski Nakamura Ferreira Okonkwo Rossi Petrov Andersen "
            "Castillo Mensah Novak Schmidt Dubois Kaplan Iyer Osei Brennan Vasquez Sato Holm Abara Quispe "
            "Lindgren Falk Ortega Yilmaz Nguyen Kruger Baptiste Marchetti Wójcik Ahmadi Oyelaran Bergstrom "
            "Castellanos Delacroix Eriksen Fontaine Gallagher Hashemi Ibarra Jovanovic Kapoor Laurent "
            "Mwangi Nieminen Oduya Pellegrini Quayle Rasmussen Szabo Thorsen Urquhart Valdivia").split()
PLACES = ("Berlin Lisbon Nairobi Osaka Toronto Zürich Lagos Austin Dublin Seoul Porto Kraków Tallinn Bogotá "
          "Montréal Hanoi Cusco Bergen Valencia Accra Marrakesh Tbilisi Ljubljana Hobart Reykjavík Oaxaca "
          "Kyoto Tromsø Antwerp Gdańsk Bilbao Salzburg Cartagena Zanzibar Galway Lyon Turin Bruges Seville "
          "Krabi Queenstown Halifax Asheville Savannah Boulder Tucson Madeira Sintra Hvar Plovdiv Matera "
          "Aarhus Ghent Olomouc Trieste Cádiz Tartu Riga Vilnius Split Kotor Granada Nantes Leipzig").split()
TOOLS = ("PostgreSQL Redis Kafka Terraform Kubernetes nginx Grafana Prometheus Django FastAPI React Svelte "
         "TypeScript Rust Go Python pgbouncer Elasticsearch CloudFront Consul Airflow dbt Snowflake Sentry "
         "Datadog GitHub GitLab Jenkins Docker Helm ArgoCD Celery RabbitMQ SQLite DuckDB Spark Flink Pulsar "
         "Cassandra MongoDB ClickHouse Trino Superset Metabase Jupyter Pandas Polars NumPy Ansible Packer "
         "Nomad Istio Envoy Traefik Caddy HAProxy Keycloak Okta Stripe Twilio SendGrid Figma Linear Jira "
         "Notion Slack Obsidian Neovim Bazel Gradle Maven Poetry Ruff mypy pytest Vite Webpack Tailwind").split()
TOPICS = ("deploy release migration outage incident review budget roadmap hiring onboarding backup restore "
          "latency throughput caching authentication billing invoices pricing indexing logging alerting "
          "dashboards retention compliance audit encryption rotation schema partitions replicas failover "
          "benchmarks regression refactor prototype experiment rollout quotas sharding vacuum checkpoints "
          "snapshots webhooks pagination throttling scheduler backlog sprint retro changelog licensing "
          "contracts procurement offsite workshop interviews certificates firewall subnets keypairs dns").split()
FOODS = ("ramen pho paella tagine pierogi bibimbap ceviche moussaka laksa shakshuka risotto goulash falafel "
         "jollof injera dumplings gnocchi empanadas katsu curry tamales pavlova baklava churros mochi "
         "croissants sourdough kimchi halloumi burrata tempeh lentils quinoa okonomiyaki arepas").split()
DRINKS = "espresso matcha chai kombucha rooibos oolong cortado mezcal riesling lambic kefir yerba".split()
HOBBIES = ("bouldering pottery birdwatching sailing chess calligraphy beekeeping woodworking salsa fencing "
           "archery kayaking origami knitting astronomy gardening surfing juggling bookbinding ceramics "
           "orienteering rowing skateboarding snorkelling tango ukulele watercolour climbing").split()
PETS = "dog cat parrot rabbit tortoise hamster ferret gecko corgi beagle labrador dachshund terrier".split()
PET_NAMES = ("Biscuit Pepper Mango Waffles Juniper Noodle Pickle Ziggy Olive Clementine Basil Truffle "
             "Pretzel Marmalade Nacho Poppy Socks Winnie Luna Momo Kiwi Fig Dumpling").split()
RELATIVES = ("sister brother mother father daughter son cousin aunt uncle grandmother grandfather niece "
             "nephew partner wife husband stepdad godmother").split()
AUTHORS = "Le Guin|Ishiguro|Atwood|Borges|Calvino|Morrison|Murakami|Pratchett|Jemisin|Chiang|Tokarczuk|" \
          "Mantel|Adichie|Saramago|Szymborska|Kundera|Lispector|Achebe|Sebald|Ferrante".split("|")
GENRES = "jazz techno bluegrass fado flamenco reggae cumbia afrobeat klezmer bossa shoegaze grime".split()
ALLERGENS = "peanuts shellfish gluten lactose sesame pollen penicillin latex kiwi mustard celery".split()
BRANDS = ("ThinkPad MacBook Framework Kindle Garmin Fitbit Sonos Bose Nikon Fujifilm Leica Brompton Vespa "
          "Miele Dyson Lego Moleskine Lamy Patagonia Arcteryx Kobo Remarkable").split()
EVENTS = ("marathon triathlon regatta ultramarathon gravel race swimrun duathlon hackathon conference "
          "meetup festival wedding reunion retreat").split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January February March April May June July August September October November December".split()
ROLES = ("manager mentor landlord dentist physiotherapist accountant recruiter editor coach neighbour "
         "plumber tutor architect therapist lawyer").split()
SYL = "ka lo mi ra ven tor sa qui del an bri zo pu lex mar ith on ue cal dra fen gul hes bo".split()

# Ways of saying things: every frame draws its verb and connective from one of these.
SAID = ["mentioned", "noted", "said", "explained", "told me", "confirmed", "admitted", "warned",
        "insisted", "joked", "complained", "revealed", "promised", "wrote", "texted", "emailed",
        "clarified", "stressed", "hinted", "reminded me"]
DECIDED = ("decided agreed settled chose committed resolved concluded voted arranged determined").split()
LIKES = ["loves", "adores", "enjoys", "prefers", "likes", "craves", "swears by", "raves about",
         "cannot resist", "is obsessed with", "is hooked on", "always orders"]
DISLIKES = ["hates", "avoids", "dislikes", "cannot stand", "refuses", "steers clear of", "gave up",
            "is tired of", "never touches", "skips"]
WHEN = ["next", "last", "this", "every other", "the first", "the second", "early", "late", "mid"]
MOVED = ["moved", "migrated", "switched", "ported", "shifted", "transferred", "rewrote", "rebuilt"]
BECAUSE = ["because", "since", "as", "given that", "after", "now that", "so that", "unless"]
FEELING = ["nervous", "excited", "worried", "thrilled", "anxious", "relieved", "curious", "unsure",
           "hopeful", "frustrated", "proud", "overwhelmed"]
PROBLEMS = ["keeps timing out", "drops connections", "leaks memory", "double-bills customers",
            "loses events", "fills the disk", "throttles uploads", "rejects valid tokens",
            "corrupts exports", "pages on-call at night", "blocks the release", "misses deadlines"]
THINGS = ["bag", "case", "strap", "notebook", "lamp", "scarf", "mug", "poster", "tripod", "cushion",
          "wallet", "speaker", "pen", "planner", "jacket", "backpack"]


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(SURNAMES)}" if rng.random() < 0.5 else rng.choice(FIRST)


def _code(rng: random.Random) -> str:
    return "".join(rng.choice(SYL) for _ in range(3)).capitalize()


def _time(rng: random.Random) -> str:
    return rng.choice([f"{rng.choice(WHEN)} {rng.choice(WEEKDAYS)}", f"{rng.choice(MONTHS)} {rng.randint(1, 28)}",
                       f"{rng.choice(WHEN)} {rng.choice(MONTHS)}", f"in {rng.randint(2, 11)} weeks",
                       f"before {rng.choice(MONTHS)}"])


# Alternatives for the words that carry a frame, so no frame repeats its wording verbatim.
LIVES = ["lives in", "moved to", "settled in", "is based in", "rents a flat in", "grew up in",
         "studies in", "works in", "retired to", "bought a house in"]
VISITS = ["visits", "flies over", "comes home", "drops by", "stays with us", "calls", "hosts dinner",
          "travels back", "takes the train", "sends postcards"]
RESTAURANTS = ["restaurants", "cafés", "bistros", "food trucks", "canteens", "night markets", "bakeries",
               "street stalls", "diners", "tavernas"]
AFTER = ["after", "before", "during", "instead of", "alongside", "to recover from", "to celebrate",
         "between rounds of", "on days off from", "whenever skipping"]
INJURY = ["injury", "accident", "setback", "doctor's advice", "bad experience", "bet", "diet",
          "migraine", "sleep problem", "dare"]
ADOPTED = ["adopted", "rescued", "fostered", "found", "inherited", "bought", "took in", "is minding",
           "brought home", "is training"]
SHELTER = ["shelter", "breeder", "farm", "neighbour", "charity", "friend", "colleague", "pet shop",
           "rescue centre", "cousin"]
GIFT = ["Gift idea", "Birthday present", "Present", "Housewarming gift", "Thank-you gift",
        "Christmas idea", "Souvenir", "Wedding gift", "Surprise", "Leaving present"]
UNDER = ["under", "around", "about", "max", "no more than", "roughly", "at most", "below",
         "near", "up to"]
MONEY = ["euros", "dollars", "pounds", "francs", "kroner", "zloty", "yen", "pesos", "rand", "lari"]
READING = ["is reading", "finished", "recommends", "is rereading", "gave up on", "lent me",
           "is listening to", "quoted", "disliked", "is halfway through"]
WHILE = ["while doing", "after", "before", "on the way to", "between", "instead of", "to unwind from",
         "during breaks from", "when too tired for", "mixed with"]
LATENCY = ["p95 now", "p99 went to", "median is", "latency dropped to", "tail latency is",
           "cold start takes", "timeouts at", "builds take", "queries average", "pages load in"]
DEC_USE = ["to use", "to drop", "to trial", "to standardise on", "to pin", "to retire", "to adopt",
           "to benchmark", "to fork", "to self-host"]
IN_PROJECT = ["in project", "for the", "across", "inside", "for codename", "within", "for team",
              "in the", "on", "for squad"]
OWNS = ["owns", "leads", "runs", "maintains", "reviews", "approves", "coordinates", "is on call for",
        "documents", "audits"]
ASK = ["ask", "ping", "escalate to", "call", "loop in", "page", "warn", "consult", "email", "notify"]
WORKS_FROM = ["works from", "is based in", "commutes from", "opened an office in", "moved to",
              "practises in", "sees clients in", "lives near", "teaches in", "volunteers in"]
MEET = ["meet", "appointment", "call", "lunch", "session", "check-in", "visit", "coffee", "review",
        "consultation"]
MOVES = ["moves to", "happens in", "was cancelled in", "is booked in", "returns to", "starts in",
         "ends in", "is hosted in", "sold out in", "got postponed to"]
DOCS = ["Passport", "Visa", "Driving licence", "ID card", "Residence permit", "Insurance",
        "Rail pass", "Gym membership", "Lease", "Library card"]
EXPIRES = ["expires", "runs out", "lapses", "is due", "needs renewing", "ends", "is valid until",
           "was extended to", "must be replaced", "gets checked"]
FLYING = ["flying to", "the trip to", "moving to", "the conference in", "driving to",
          "the holiday in", "the wedding in", "relocating to", "the hike near", "visiting"]
LEARN = ["wants to learn", "started", "signed up for", "is curious about", "quit", "restarted",
         "is coaching", "got hooked on", "tried", "is saving for"]
COURSE = ["a course", "lessons", "a workshop", "a class", "the club", "a retreat", "a weekend camp",
          "private coaching", "a bootcamp", "evening classes"]
COSTS = ["costs", "charges", "is", "runs at", "asks", "totals", "comes to", "works out at",
         "was quoted at", "adds up to"]
VET = ["a vet visit", "vaccinations", "a grooming", "a check-up", "new food", "a walker",
       "dental care", "a microchip", "flea treatment", "a sitter"]
DRIVES = ["drives", "pays", "books it", "handles it", "goes along", "holds the leash", "reminds me",
          "picks up", "covers it", "takes notes"]
BUDGET = ["Budget for", "Spend on", "Forecast for", "Cost of", "Quote for", "Invoice for",
          "Overrun on", "Savings on", "Estimate for", "Cap on"]
FOUND = ["found work", "got a job", "opened a shop", "started a PhD", "retired", "had a baby",
         "bought land", "joined a startup", "teaches", "runs a café"]


FEELS = ["feels", "is", "seems", "sounds", "got", "became", "looks", "admits being", "is still",
         "stays"]
ABOUT = ["about", "regarding", "over", "ahead of", "after", "around", "since", "because of", "for",
         "concerning"]
SORT = ["sort it", "renew", "replace it", "apply", "book an appointment", "chase the embassy",
        "upload the scan", "pay the fee", "file the form", "call the office"]
NAMED = ["named", "called", "nicknamed", "who answers to", "christened", "registered as", "known as",
         "we call", "renamed", "tagged"]
NEAR = ["near", "outside", "in", "close to", "north of", "south of", "behind", "across from",
        "east of", "west of"]
TICKET = ["Ticket", "Issue", "Bug", "Incident", "Case", "Task", "Story", "Alert", "Page", "Report"]
ALLERGIC = ["is allergic to", "reacts to", "is intolerant to", "can't digest", "gets hives from",
            "must avoid", "is sensitive to", "carries an EpiPen for", "tested positive for",
            "gets sick from"]
NEEDS = ["needs", "is due for", "gets", "missed", "skipped", "booked", "hates", "loved", "requires",
         "is overdue for"]


def _frames(rng: random.Random) -> list[Callable[[], str]]:
    p, q = _name(rng), _name(rng)
    c = rng.choice
    return [
        lambda: f"{p} {c(SAID)} their {c(RELATIVES)} {c(LIVES)} {c(PLACES)} and {c(VISITS)} {_time(rng)}.",
        lambda: f"{p} {c(ALLERGIC)} {c(ALLERGENS)}; {c(DISLIKES)} {c(FOODS)} at {c(PLACES)} {c(RESTAURANTS)}.",
        lambda: f"{p} {c(LIKES)} {c(FOODS)} with {c(DRINKS)}, {c(AFTER)} {c(HOBBIES)}.",
        lambda: f"{p} {c(DISLIKES)} {c(DRINKS)} {c(BECAUSE)} of a {c(HOBBIES)} {c(INJURY)} {_time(rng)}.",
        lambda: f"{p} {c(ADOPTED)} a {c(PETS)} {c(NAMED)} {c(PET_NAMES)} from a {c(SHELTER)} {c(NEAR)} {c(PLACES)}.",
        lambda: f"{c(GIFT)} for {p}: a {c(BRANDS)} {c(THINGS)}, {c(UNDER)} {rng.randint(20, 400)} {c(MONEY)}.",
        lambda: f"{p} {c(FEELS)} {c(FEELING)} {c(ABOUT)} the {c(PLACES)} {c(EVENTS)} {_time(rng)}.",
        lambda: f"{p} {c(READING)} {c(AUTHORS)} and {c(LIKES)} {c(GENRES)} {c(WHILE)} {c(HOBBIES)}.",
        lambda: f"{p} {c(MOVED)} {c(TOPICS)} from {c(TOOLS)} to {c(TOOLS)}; {c(LATENCY)} {rng.randint(3, 900)} ms.",
        lambda: f"{c(TICKET)} {_code(rng).upper()}-{rng.randint(10, 9999)}: {c(TOOLS)} {c(TOPICS)} {c(PROBLEMS)}.",
        lambda: f"{p} and {q} {c(DECIDED)} {c(DEC_USE)} {c(TOOLS)} for {c(TOPICS)} {c(IN_PROJECT)} {_code(rng)}.",
        lambda: f"{p} {c(OWNS)} {c(TOPICS)} for {_code(rng)}; {c(ASK)} {q} {c(BECAUSE)} {c(TOOLS)} {c(PROBLEMS)}.",
        lambda: f"{p}'s {c(ROLES)} {q} {c(WORKS_FROM)} {c(PLACES)}; {c(MEET)} {_time(rng)}.",
        lambda: f"{p} {c(SAID)} the {c(TOPICS)} {c(EVENTS)} {c(MOVES)} {c(PLACES)} {_time(rng)}.",
        lambda: f"{c(DOCS)} of {p} {c(EXPIRES)} {_time(rng)}; {c(SORT)} before {c(FLYING)} {c(PLACES)} with {q}.",
        lambda: f"{p} {c(LEARN)} {c(HOBBIES)}; {c(COURSE)} in {c(PLACES)} {c(COSTS)} {rng.randint(40, 900)} {c(MONEY)}.",
        lambda: f"{c(PET_NAMES)} the {c(PETS)} {c(NEEDS)} {c(VET)} {_time(rng)}; {p} {c(DRIVES)}.",
        lambda: f"{p} {c(SAID)} {q} {c(LIKES)} {c(GENRES)} and {c(DISLIKES)} {c(GENRES)}.",
        lambda: f"{c(BUDGET)} {_code(rng)} {c(TOPICS)}: {rng.randint(2, 900)}k, {c(DECIDED)} with {p} {_time(rng)}.",
        lambda: f"{p} {c(MOVED)} to {c(PLACES)} {c(BECAUSE)} their {c(RELATIVES)} {c(FOUND)} there.",
    ]


def memory(rng: random.Random) -> str:
    """One memory: a sentence or two about one person, naming specifics."""
    frames = _frames(rng)
    text = rng.choice(frames)()
    return text if rng.random() < 0.65 else f"{text} {rng.choice(frames)()}"


def write_memory_note(folder: Any, template: str, text: str, rng: random.Random, now: dt.datetime) -> None:
    """`text` as a memory note in `folder`, written as vaultmem writes one: created and last
    used within the year before `now`, 0-5 uses, a speaker; the id drawn from `rng`."""
    from vaultmem.storage import note as notes

    when = now - dt.timedelta(days=rng.uniform(0, 365))
    memory = notes.Memory(id=str(uuid.UUID(int=rng.getrandbits(128))), content=text, created=when,
                          last_used=when, use_count=rng.randint(0, 5), strength=1.0, status="active",
                          tags=[], entities=[], meta={"speaker": rng.choice(("Ann", "Bo"))})
    (folder / f"{notes.slugify(text)}-{memory.short_id}.md").write_text(notes.render_note(template, memory),
                                                                        encoding="utf-8")
