// Drives `firedrill server` with the real toxiproxy-node-client.
// Usage: node scenario.js HOST:PORT. Exits non-zero on the first failed check.
// Scenario: version, create, latency observed, reset_peer observed, remove
// toxics, disable/enable, populate, reset.
"use strict";
const net = require("node:net");
const { Toxiproxy } = require("toxiproxy-node-client");

function check(cond, message) {
  if (!cond) throw new Error("FAILED: " + message);
  console.log("ok:", message);
}

function echoServer() {
  return new Promise((resolve) => {
    // reset_peer resets the upstream side too (Toxiproxy sets SO_LINGER 0
    // on both sockets): an echo must survive ECONNRESET.
    const server = net.createServer((s) => {
      s.on("error", () => {});
      s.pipe(s);
    });
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

function split(listen) {
  const i = listen.lastIndexOf(":");
  return { host: listen.slice(0, i), port: Number(listen.slice(i + 1)) };
}

// Sends a payload, resolves with the seconds until its echo, or rejects
// with the socket error (ECONNRESET, ECONNREFUSED).
function roundTrip(listen, payload = "ping") {
  return new Promise((resolve, reject) => {
    const { host, port } = split(listen);
    const s = net.connect({ host, port, noDelay: true });
    let got = "";
    let start;
    s.on("connect", () => {
      start = process.hrtime.bigint();
      s.write(payload);
    });
    s.on("data", (d) => {
      got += d.toString();
      if (got.length >= payload.length) {
        s.destroy();
        check(got === payload, "echo carries the payload");
        resolve(Number(process.hrtime.bigint() - start) / 1e9);
      }
    });
    s.on("error", reject);
    s.on("close", () => {
      if (got.length < payload.length) reject(Object.assign(new Error("closed early"), { code: "CLOSED" }));
    });
    s.setTimeout(10000, () => { s.destroy(); reject(new Error("timeout")); });
  });
}

async function errorCode(promise) {
  try { await promise; return "none"; } catch (e) { return e.code; }
}

async function main() {
  const api = "http://" + process.argv[2];
  const toxiproxy = new Toxiproxy(api);
  const version = JSON.parse(await toxiproxy.getVersion()).version;
  const [major, minor] = version.split(".").map(Number);
  check(major > 2 || (major === 2 && minor >= 6), "version " + version + " >= 2.6.0");

  const echo = await echoServer();
  const upstream = "127.0.0.1:" + echo.address().port;
  const proxy = await toxiproxy.createProxy({ name: "node_echo", listen: "127.0.0.1:0", upstream });
  check(!proxy.listen.endsWith(":0"), "listen rewritten: " + proxy.listen);
  check((await roundTrip(proxy.listen)) < 0.5, "pass-through is fast");

  const latency = await proxy.addToxic({ type: "latency", attributes: { latency: 700, jitter: 0 } });
  check(latency.name === "latency_downstream" && latency.toxicity === 1, "toxic defaults");
  const slow = await roundTrip(proxy.listen);
  check(slow >= 0.7 && slow < 5, "latency observed: " + slow.toFixed(3) + "s");
  const updated = await latency.update({ attributes: { latency: 100 } });
  check(updated.attributes.latency === 100 && updated.attributes.jitter === 0, "toxic update merges attributes");
  await latency.remove();
  check((await roundTrip(proxy.listen)) < 0.5, "latency gone after remove");

  const rst = await proxy.addToxic({ name: "rst", type: "reset_peer", attributes: { timeout: 0 } });
  check((await errorCode(roundTrip(proxy.listen))) === "ECONNRESET", "reset_peer observed as ECONNRESET");
  await rst.remove();
  check((await proxy.getToxiproxy().get("node_echo")) !== undefined, "proxy still there");

  const disabled = await proxy.update({ enabled: false });
  check(disabled.enabled === false, "disabled");
  check((await errorCode(roundTrip(proxy.listen))) === "ECONNREFUSED", "disabled proxy refuses");
  const enabled = await proxy.update({ enabled: true });
  check(enabled.enabled === true, "enabled");
  check((await roundTrip(proxy.listen)) < 0.5, "re-enabled proxy forwards");

  const populated = await toxiproxy.populate([
    { name: "node_a", listen: "127.0.0.1:0", upstream, enabled: true },
    { name: "node_b", listen: "127.0.0.1:0", upstream, enabled: true },
  ]);
  check(Object.keys(populated).sort().join(",") === "node_a,node_b", "populate created both");
  check((await roundTrip(populated.node_b.listen)) < 0.5, "populated proxy forwards");

  await proxy.addToxic({ type: "latency", attributes: { latency: 1000 } });
  await proxy.update({ enabled: false });
  await toxiproxy.reset();
  const all = await toxiproxy.getAll();
  check(all.node_echo.enabled === true, "reset enables every proxy");
  check((await roundTrip(proxy.listen)) < 0.5, "reset removed the latency");

  for (const p of Object.values(all)) await p.remove();
  check(Object.keys(await toxiproxy.getAll()).length === 0, "all proxies removed");
  echo.close();
  console.log("node scenario passed");
}

main().catch((e) => { console.error(e); process.exit(1); });
