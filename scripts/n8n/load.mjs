// One load phase of scripts/n8n-compare: `--connections` closed-loop clients share `--requests`
// POSTs to `--url` (keep-alive connections, one request at a time each), then one table row:
// runs/s, p50 and p99 of the answered runs, and the server's resident memory from /proc
// (`VmRSS` summed over the server's process tree, `VmHWM` of its main process).
//
// `--kind vwf`: POST {"input": {n, who}} to /designs/{name}/run, right when the answer is a 200
// with status "done". `--kind n8n`: POST {n, who} to the webhook, right when the answer is a 200
// whose `text` is the last Set node's. Anything else counts as an error (the first few are shown
// on standard error). `--token-file FILE` sends the API token in it (`vwf serve` writes the one
// it makes to `<home>/workflow-serve-<port>.token`) as `Authorization: Bearer`. Node's standard
// library only.

import http from "node:http";
import fs from "node:fs";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
}
const url = new URL(args.url);
const kind = args.kind;
const connections = Number(args.connections);
const requests = Number(args.requests);
const pid = Number(args.pid);
const label = args.label ?? kind;
const auth = args["token-file"] ? { authorization: `Bearer ${fs.readFileSync(args["token-file"], "utf8").trim()}` } : {};
if (!["vwf", "n8n"].includes(kind) || !(connections > 0) || !(requests > 0) || !(pid > 0)) {
  console.error("usage: node load.mjs --url URL --kind vwf|n8n --connections N --requests M --pid PID [--label TEXT] [--token-file FILE]");
  process.exit(2);
}

const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const TIMEOUT_MS = 120_000;

function input(i) {
  return { n: i % 10, who: `client request ${i}` };
}

function post(i) {
  const body = JSON.stringify(kind === "vwf" ? { input: input(i) } : input(i));
  return new Promise((resolve) => {
    const req = http.request(
      url,
      { method: "POST", agent, headers: { ...auth, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve(check(i, res.statusCode, text)));
        res.on("error", (e) => resolve(`response: ${e.message}`));
      },
    );
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on("error", (e) => resolve(`transport: ${e.message}`));
    req.end(body);
  });
}

/// null when the answer is right, else what was wrong.
function check(i, status, text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return `${status}, not JSON: ${text.slice(0, 200)}`;
  }
  if (status !== 200) return `${status}: ${text.slice(0, 200)}`;
  const { n, who } = input(i);
  const expected = `${n >= 5 ? "big" : "small"}: ${n} (${who})`;
  if (kind === "vwf") {
    if (body.status !== "done") return `run not done: ${text.slice(0, 200)}`;
    const branch = n >= 5 ? "big" : "small";
    if (body.outputs?.[branch]?.text !== expected) return `unexpected output: ${text.slice(0, 200)}`;
    return null;
  }
  const item = Array.isArray(body) ? body[0] : body;
  return item?.text === expected ? null : `unexpected answer: ${text.slice(0, 200)}`;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length))) - 1];
}

function statusField(id, field) {
  try {
    const line = fs.readFileSync(`/proc/${id}/status`, "utf8").split("\n").find((l) => l.startsWith(`${field}:`));
    return line ? Number(line.split(/\s+/)[1]) : 0;
  } catch {
    return 0;
  }
}

/// The process and its descendants, from every /proc/<pid>/stat's parent.
function tree(root) {
  const children = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  const all = [root];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]) ?? []));
  return all;
}

const times = [];
const errors = [];
let next = 0;
async function client() {
  for (let i = next++; i < requests; i = next++) {
    const started = process.hrtime.bigint();
    const wrong = await post(i);
    const took = Number(process.hrtime.bigint() - started) / 1e6;
    if (wrong === null) times.push(took);
    else errors.push(wrong);
  }
}

const began = process.hrtime.bigint();
await Promise.all(Array.from({ length: connections }, client));
const wall = Number(process.hrtime.bigint() - began) / 1e9;
agent.destroy();

times.sort((a, b) => a - b);
const rssKb = tree(pid).reduce((sum, id) => sum + statusField(id, "VmRSS"), 0);
const hwmKb = statusField(pid, "VmHWM");
for (const e of errors.slice(0, 3)) console.error(`${label}, ${connections} connections: ${e}`);
const mb = (kb) => `${(kb / 1024).toFixed(1)} MB`;
const msText = (v) => (Number.isNaN(v) ? "-" : `${v.toFixed(2)} ms`);
console.log(
  `| ${label} | ${connections} | ${times.length} | ${errors.length} | ${(times.length / wall).toFixed(0)} | ` +
    `${msText(percentile(times, 0.5))} | ${msText(percentile(times, 0.99))} | ${mb(rssKb)} | ${mb(hwmKb)} |`,
);
