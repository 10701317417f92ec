// scratchpad: the seed's example in plain JavaScript (Node stdlib only).
const { createInterface } = require("node:readline");
const { stderr, stdin, stdout } = require("node:process");

const notes = [];
function send(o) { stdout.write(JSON.stringify(o) + "\n"); }
function log(s) { stderr.write(`[scratchpad] ${s}\n`); }

send({ type: "hello", name: "scratchpad", version: "1.0.0", capabilities: ["commands", "tools"] });
const rl = createInterface({ input: stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let f;
  try { f = JSON.parse(line); } catch { return log(`skipping a bad line: ${line}`); }
  if (f.type === "hello_ack") {
    // f.cwd is the user's project directory.
    send({ type: "register_command", name: "note", description: "append a note" });
    send({ type: "register_tool", name: "read_notes", description: "Read the user's scratchpad notes.",
           schema: { type: "object", properties: {} } });
    send({ type: "ready" });
  } else if (f.type === "command_invoked" && f.name === "note") {
    notes.push(f.args);
    send({ type: "command_response", id: f.id, action: "display", display: `noted: ${f.args}` });
  } else if (f.type === "tool_call" && f.name === "read_notes") {
    send({ type: "tool_result", id: f.id, content: [{ type: "text", text: notes.join("\n") || "(no notes yet)" }] });
  } else if (f.type === "shutdown") {
    send({ type: "shutdown_ack" });
    rl.close();
  }
});
