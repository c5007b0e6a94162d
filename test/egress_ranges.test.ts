// ctx.fetch refuses every address range that is not the public internet,
// whatever name leads there. No packet leaves this machine: the addresses are
// judged by the check alone (a table of edges), and the names are resolved
// inside a bubblewrap sandbox whose network has nothing but loopback, so a
// check that let one through would fail to connect, with another message.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { isNonPublicAddress } from "../core/doors/egress.ts";
import type { NAMES } from "./fixtures/tools/fixture_egress_names.ts";
import {
  BWRAP_MISSING,
  bwrapPath,
  connect,
  fixtureToolsDir,
  runtimeName,
  skipOrFail,
  tempDir,
  textOf,
} from "./helpers.ts";

describe(`isNonPublicAddress (${runtimeName})`, () => {
  // Each refused range by its first and last address, and the public neighbours on either side.
  const table: [string, boolean][] = [
    ["0.0.0.0", true],
    ["0.255.255.255", true],
    ["1.0.0.0", false],
    ["9.255.255.255", false],
    ["10.0.0.0", true],
    ["10.255.255.255", true],
    ["11.0.0.0", false],
    ["100.63.255.255", false],
    ["100.64.0.0", true],
    ["100.127.255.255", true],
    ["100.128.0.0", false],
    ["126.255.255.255", false],
    ["127.0.0.1", true],
    ["127.255.255.254", true],
    ["128.0.0.0", false],
    ["169.253.255.255", false],
    ["169.254.0.0", true],
    ["169.254.169.254", true],
    ["169.255.0.0", false],
    ["172.15.255.255", false],
    ["172.16.0.0", true],
    ["172.31.255.255", true],
    ["172.32.0.0", false],
    ["192.167.255.255", false],
    ["192.168.0.0", true],
    ["192.168.255.255", true],
    ["192.169.0.0", false],
    ["198.17.255.255", false],
    ["198.18.0.0", true],
    ["198.19.255.255", true],
    ["198.20.0.0", false],
    ["223.255.255.255", false],
    ["224.0.0.0", true],
    ["255.255.255.255", true],
    ["8.8.8.8", false],
    // The second part of a private range, under another first part.
    ["8.100.0.1", false],
    ["8.254.0.1", false],
    ["8.168.0.1", false],
    ["8.18.0.1", false],
    ["8.16.0.1", false],
    ["203.0.113.7", false],
    ["::", true],
    ["::1", true],
    ["[::1]", true],
    ["::2", true],
    ["::10.0.0.1", true],
    ["::8.8.8.8", true],
    ["1::", false],
    ["fc00::", true],
    ["fdff:ffff::1", true],
    ["FD12::1", true],
    ["fbff::1", false],
    ["fe80::1", true],
    ["fe90::1", true],
    ["fea0::1", true],
    ["febf::1", true],
    ["fe7f::1", false],
    ["ff02::1", true],
    ["::ffff:10.0.0.1", true],
    ["::FFFF:127.0.0.1", true],
    ["::ffff:192.168.1.1", true],
    ["::ffff:8.8.8.8", false],
    // The same addresses in other written forms, and IPv6 forms that lead to an IPv4 address.
    ["::ffff:a00:1", true],
    ["0:0:0:0:0:ffff:7f00:1", true],
    ["::ffff:808:808", false],
    ["64:ff9b::10.0.0.1", true],
    ["64:ff9b::a00:1", true],
    ["64:ff9b::8.8.8.8", false],
    ["64:ff9b:1::8.8.8.8", true],
    ["2002:a00:1::1", true],
    ["2002:c0a8:101::1", true],
    ["2002:808:808::1", false],
    ["2001:0:4136:e378::1", true],
    ["100::1", true],
    ["fec0::1", true],
    ["feff::1", true],
    ["fe80::1%eth0", true],
    ["ff00::", true],
    ["not an address", true],
    ["1:2:3:4:5:6:7:8:9", true],
    ["::ffff:10.0.0.256", true],
    ["2001:db8::1", false],
    ["2606:4700::1111", false],
  ];
  for (const [address, refused] of table) {
    it(`${address} is ${refused ? "not public: refused" : "public"}`, () => {
      assert.equal(isNonPublicAddress(address), refused);
    });
  }
});

/**
 * Where each name of the fixture leads (one line per address; `mixed` has a public and a private one); `unknown`
 * leads nowhere.
 */
const HOSTS: Record<Exclude<(typeof NAMES)[number], "unknown">, string[]> = {
  ten: ["10.0.0.1"],
  private172: ["172.16.5.4"],
  private192: ["192.168.1.1"],
  loopback: ["127.0.0.2"],
  linklocal: ["169.254.169.254"],
  shared: ["100.64.0.1"],
  zero: ["0.0.0.0"],
  benchmark: ["198.18.0.1"],
  multicast: ["224.0.0.1"],
  v6loopback: ["::1"],
  v6unique: ["fd00::1"],
  v6linklocal: ["fe80::1"],
  v6mapped: ["::ffff:10.0.0.1"],
  mixed: ["203.0.113.7", "10.0.0.7"],
  public: ["203.0.113.7"],
  "10.0.0.1": ["10.0.0.5"],
};

describe(`ctx.fetch refuses names that resolve to non-public addresses (${runtimeName})`, () => {
  const sandbox = bwrapPath();
  if (!sandbox) {
    // One test says what is missing (and fails under CI, which installs it) in place of the suite.
    it("runs warden in a sandbox with a hosts file and a network of its own", (t) => skipOrFail(t, BWRAP_MISSING));
    return;
  }

  it("for each refused range, names the address and what to declare, and connects nowhere", async () => {
    const work = tempDir();
    try {
      const hosts = ["127.0.0.1 localhost"];
      for (const [name, addresses] of Object.entries(HOSTS)) {
        for (const address of addresses) hosts.push(`${address} ${name}.test`);
      }
      hosts.push("10.0.0.9 noport.test");
      writeFileSync(path.join(work.dir, "hosts"), hosts.join("\n") + "\n");
      // A name not in hosts is asked of a DNS server on the sandbox's own loopback, where none listens.
      writeFileSync(path.join(work.dir, "resolv.conf"), "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n");
      const session = await connect({
        env: { WARDEN_TOOLS_DIR: fixtureToolsDir },
        // A network namespace with loopback alone: were a refused address let through, the connect would fail here
        // (ENETUNREACH), never leave the machine.
        wrap: (command, args) => ({
          command: sandbox,
          args: [
            ...["--unshare-user", "--uid", "0", "--gid", "0", "--unshare-net", "--die-with-parent"],
            ...["--dev-bind", "/", "/", "--ro-bind", path.join(work.dir, "hosts"), "/etc/hosts"],
            ...["--ro-bind", path.join(work.dir, "resolv.conf"), "/etc/resolv.conf"],
            ...["--", command, ...args],
          ],
        }),
      });
      try {
        const fetch = (name: string) =>
          session.client.callTool({ name: "fixture_egress_names", arguments: { fetch: `http://${name}.test:47613/` } });
        for (const [name, addresses] of Object.entries(HOSTS)) {
          const result = await fetch(name);
          const text = textOf(result);
          assert.equal(result.isError, true, `${name}: ${text}`);
          if (name === "public") {
            // The check lets a public address through: the sandbox, not the check, stops the connection.
            assert.equal(text, "Fetch from http://public.test:47613 failed: ENETUNREACH");
            assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "tool_failed");
            continue;
          }
          // Written out, not computed with the function under test: `mixed` is refused for its private address.
          const refused = name === "mixed" ? "10.0.0.7" : addresses[0];
          const declared = refused.includes(":") ? `[${refused}]` : refused;
          assert.equal(
            text,
            `tool "fixture_egress_names" may not fetch from http://${name}.test:47613: ${name}.test resolves to the ` +
              `non-public address ${refused}; declare http://${declared}:47613 to allow it`,
          );
          assert.equal((result._meta as Record<string, unknown>)["warden/error_code"], "capability_denied", name);
        }
        const noport = await session.client.callTool({
          name: "fixture_egress_names",
          arguments: { fetch: "http://noport.test/" },
        });
        assert.equal(
          textOf(noport),
          'tool "fixture_egress_names" may not fetch from http://noport.test: noport.test resolves to the ' +
            "non-public address 10.0.0.9; declare http://10.0.0.9 to allow it",
        );
        const unknown = await fetch("unknown");
        assert.equal(textOf(unknown), "Cannot fetch from http://unknown.test:47613: unknown.test does not resolve");
        assert.equal((unknown._meta as Record<string, unknown>)["warden/error_code"], "not_found");
      } finally {
        await session.close();
      }
    } finally {
      work.remove();
    }
  });
});
