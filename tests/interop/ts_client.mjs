// One session of the official TypeScript MCP SDK client against a server started over stdio:
// what Claude Desktop, Cursor and most MCP clients run. The client checks every answer
// against the protocol's schemas (Zod) and throws on one that does not fit.
//
//   node ts_client.mjs '<json: {"command": ..., "args": [...], "env": {...}, "calls": [[name, args], ...]}>'
//
// Prints one JSON report: the negotiated protocol version, the server's info, capabilities
// and tools, each call's result (or the error the client threw), the vault's resources and
// the first one's text, and ping.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const spec = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: spec.command, args: spec.args, env: spec.env, stderr: "ignore" });
const report = {};
transport.setProtocolVersion = (version) => { report.protocolVersion = version; };
const client = new Client({ name: "vaultmem-interop", version: "1.0.0" }, { capabilities: {} });

async function attempt(fn) {
  try {
    return await fn();
  } catch (error) {
    return { threw: error.message };
  }
}

await client.connect(transport);
report.serverInfo = client.getServerVersion();
report.capabilities = client.getServerCapabilities();
report.instructions = client.getInstructions() ?? null;
report.tools = (await client.listTools()).tools;
report.calls = [];
for (const [name, args] of spec.calls) {
  report.calls.push(await attempt(async () => {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError ?? false, content: result.content, structuredContent: result.structuredContent ?? null };
  }));
}
report.resources = (await client.listResources()).resources;
report.templates = (await client.listResourceTemplates()).resourceTemplates;
report.read = await attempt(async () => (await client.readResource({ uri: report.resources[0].uri })).contents);
report.readMissing = await attempt(async () => client.readResource({ uri: "vaultmem://memory/deadbeef" }));
report.prompts = (await client.listPrompts()).prompts;
report.ping = await client.ping();
await client.close();
process.stdout.write(JSON.stringify(report));
