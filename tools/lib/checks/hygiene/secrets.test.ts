// The secret shapes, assignments and entropy of hygiene/secrets, line by line: each rule fires on its shape and
// stays quiet on its neighbours (stand-ins, digests, identifiers, lockfiles), and no message carries the value.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { entropyThreshold, mask, scanLine, shannonEntropy } from "./secrets.ts";

/** Deterministic strings from an alphabet (a linear congruential generator), so no real-looking key sits in this file. */
function randomOf(alphabet: string, length: number, seed: number): string {
  let state = seed;
  let out = "";
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    out += alphabet[Math.floor((state / 2147483648) * alphabet.length)];
  }
  return out;
}
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM = UPPER + "abcdefghijklmnopqrstuvwxyz0123456789";
const B64URL = ALNUM + "_-";
const HEX = "0123456789abcdef";

const rulesOf = (file: string, line: string) => scanLine(file, line).map((m) => m.rule);

describe("hygiene/secrets: vendor shapes", () => {
  const cases: [string, string, string][] = [
    ["aws-access-key-id", "src/aws.ts", `const id = "AKIA${randomOf(UPPER + "234567", 16, 1)}";`],
    ["github-token", "src/gh.ts", `const t = "ghp_${randomOf(ALNUM, 36, 2)}";`],
    ["github-token", "src/gh.ts", `auth: github_pat_${randomOf(ALNUM + "_", 82, 3)}`],
    [
      "slack-token",
      "ops/slack.yml",
      `hook: xoxb-${randomOf("0123456789", 12, 24)}-${randomOf("0123456789", 13, 25)}-${randomOf(ALNUM, 24, 4)}`,
    ],
    ["stripe-secret-key", "pay.py", `stripe.api_key = sk_live_${randomOf(ALNUM, 24, 5)}`],
    ["google-api-key", "web/maps.js", `loadMaps("AIza${randomOf(B64URL, 35, 6)}")`],
    ["private-key", "deploy/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----"],
    ["private-key", "certs/server.pem", "  -----BEGIN RSA PRIVATE KEY-----  "],
    ["private-key", "deploy.yml", `  key: "-----BEGIN PRIVATE KEY-----\\n${randomOf(ALNUM, 40, 26)}"`],
    ["private-key", "src/key.ts", "const key = `-----BEGIN EC PRIVATE KEY-----"],
    [
      "jwt",
      "test/auth.ts",
      `const session = "eyJ${randomOf(B64URL, 20, 7)}.eyJ${randomOf(B64URL, 30, 8)}.${randomOf(B64URL, 43, 9)}";`,
    ],
  ];
  for (const [rule, file, line] of cases) {
    it(`${rule}: ${line.slice(0, 40)}`, () => {
      const found = scanLine(file, line);
      assert.deepEqual(found.map((m) => m.rule), [rule], JSON.stringify(found));
      assert.equal(found[0].severity, rule === "jwt" ? "high" : "critical");
    });
  }

  it("shapes need their boundary: a token inside a longer run is not one (entropy may still call it random)", () => {
    assert.ok(!rulesOf("a.ts", `x = "XAKIA${randomOf(UPPER, 16, 10)}"`).includes("aws-access-key-id"));
    assert.ok(!rulesOf("a.ts", `x = "ghp_${randomOf(ALNUM, 36, 11)}Z"`).includes("github-token"));
    assert.ok(
      !rulesOf("a.ts", `x = "${randomOf(ALNUM, 8, 22)}AIza${randomOf(B64URL, 35, 23)}"`).includes("google-api-key"),
    );
  });

  it("a private key header that no key follows is a constant or a message, not a key", () => {
    for (
      const line of [
        'const BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----";',
        "assert.match(text, /^-----BEGIN OPENSSH PRIVATE KEY-----\\n/);",
        "* (`-----BEGIN OPENSSH PRIVATE KEY-----`, openssh-key-v1)",
      ]
    ) {
      assert.deepEqual(rulesOf("src/sshsig.ts", line), [], line);
    }
  });

  it("documented examples and stand-ins are not secrets", () => {
    for (
      const line of [
        'aws_access_key_id = "AKIAIOSFODNN7EXAMPLE"',
        "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        'const KEY = "AIza' + "X".repeat(35) + '";',
      ]
    ) {
      assert.deepEqual(scanLine("docs/setup.ts", line), [], line);
    }
  });

  it("a message names the kind and shows the fixed prefix, never the value", () => {
    const token = "ghp_" + randomOf(ALNUM, 36, 12);
    const [match] = scanLine("src/gh.ts", `const t = "${token}";`);
    assert.equal(
      match.message,
      "Added a GitHub token: ghp_**** (40 characters); remove it from the change and revoke it",
    );
    assert.equal(match.column, 12);
    assert.ok(!match.message.includes(token.slice(4, 10)));
  });
});

describe("hygiene/secrets: values assigned to a secret's name", () => {
  it("password, token and key assignments in code, JSON, YAML and .env", () => {
    assert.deepEqual(rulesOf("src/db.ts", 'const dbPassword = "hunter22";'), ["secret-assignment"]);
    assert.deepEqual(rulesOf("config.json", '  "password": "s3cr3t-Pa55"'), ["secret-assignment"]);
    assert.deepEqual(rulesOf("app.yml", `  api_key: "k3y${randomOf(ALNUM, 10, 13)}"`), ["secret-assignment"]);
    assert.deepEqual(rulesOf(".env", "DATABASE_PASSWORD=correct9horse"), ["secret-assignment"]);
    assert.deepEqual(rulesOf(".env.production", "export SERVICE_TOKEN=tok9x81kkq2mzz"), ["secret-assignment"]);
  });

  it("types, kinds, stand-ins and reads from the environment are not", () => {
    for (
      const line of [
        "password: string;",
        'const tokenKind = "identifier";',
        'nextToken: "keyword-or-name"',
        'password = "${DB_PASSWORD}"',
        'password: "<your password>"',
        'password = "changeme"',
        'const password = "password";',
        "const password = process.env.DB_PASSWORD;",
        'label = "Enter your password"',
        'passwordField = "pw"',
        'const csrfToken = "X-CSRF-Token";',
        'apiKey = "k3y-1"',
      ]
    ) {
      assert.deepEqual(rulesOf("src/form.ts", line), [], line);
    }
    // Unquoted values count only in .env files, where they are the syntax.
    assert.deepEqual(rulesOf("src/a.ts", "DATABASE_PASSWORD=correct9horse"), []);
  });

  it("the message masks short values entirely and long ones after three characters", () => {
    assert.equal(
      scanLine("src/db.ts", 'const dbPassword = "hunter22";')[0].message,
      'Added a value for "dbPassword": **** (8 characters); read it from the environment or a secret store instead',
    );
    const value = "Zq9" + randomOf(ALNUM, 17, 14);
    const [match] = scanLine("src/db.ts", `password = "${value}"`);
    assert.ok(match.message.includes("Zq9**** (20 characters)"), match.message);
    assert.ok(!match.message.includes(value.slice(3, 8)));
  });
});

describe("hygiene/secrets: entropy", () => {
  it("Shannon entropy in bits per character", () => {
    assert.equal(shannonEntropy(""), 0);
    assert.equal(shannonEntropy("aaaa"), 0);
    assert.equal(shannonEntropy("abab"), 1);
    assert.equal(shannonEntropy("0123456789abcdef"), 4);
  });

  it("thresholds grow with length, hex below base64", () => {
    assert.ok(entropyThreshold("base64", 16) < entropyThreshold("base64", 32));
    assert.ok(entropyThreshold("base64", 32) < entropyThreshold("base64", 64));
    assert.ok(entropyThreshold("hex", 40) < entropyThreshold("base64", 40));
    // About 95 of 100 random strings pass at each length (the 5th percentile), so 90 of these 100 at least.
    for (const length of [16, 20, 32, 40, 64]) {
      let passed = 0;
      for (let seed = 1; seed <= 100; seed++) {
        if (shannonEntropy(randomOf(ALNUM, length, seed * 7919)) >= entropyThreshold("base64", length)) passed++;
      }
      assert.ok(passed >= 90, `${passed} of 100 random strings of ${length} characters pass`);
    }
  });

  it("a long random string is flagged anywhere; a shorter one or hex only beside a secret's name", () => {
    const long = randomOf(ALNUM, 40, 15);
    assert.deepEqual(rulesOf("src/client.ts", `fetch(url, { headers: { "X-Thing": "${long}" } });`), [
      "high-entropy-base64",
    ]);
    const short = randomOf(ALNUM, 24, 16);
    assert.deepEqual(rulesOf("src/client.ts", `const value = "${short}";`), []);
    assert.deepEqual(rulesOf("src/client.ts", `headers["Authorization-Token"] = ["${short}"];`), [
      "high-entropy-base64",
    ]);
    const hex = randomOf(HEX, 40, 17);
    assert.deepEqual(rulesOf("src/ci.yml", `uses: actions/checkout@${hex}`), []);
    assert.deepEqual(rulesOf("src/ci.yml", `access_token: ${hex}`), ["high-entropy-hex"]);
  });

  it("identifiers, paths, digests, public keys, data URLs and lockfiles are not", () => {
    for (
      const line of [
        "import { createDebtScannerForTheWholeProject } from './lib/debt_scanner2.ts';",
        "const p = 'node_modules/@scope/pkg20/dist/esm/index2.js';",
        `  "integrity": "sha512-${randomOf(ALNUM + "+/", 86, 18)}=="`,
        `image: registry.example/app@sha256:${randomOf(HEX, 64, 19)}`,
        `const png = "data:image/png;base64,${randomOf(ALNUM + "+/", 80, 20)}";`,
        "const uuid = '123e4567-e89b-12d3-a456-426614174000';",
        "const ALNUM = UPPER + 'abcdefghijklmnopqrstuvwxyz0123456789';",
        `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${randomOf(ALNUM, 43, 27)} signer@example`,
        'private-key: ["deploy/id_ed25519", "certs/server2.pem"]',
      ]
    ) {
      assert.deepEqual(rulesOf("src/a.ts", line), [], line);
    }
    const random = randomOf(ALNUM, 48, 21);
    assert.deepEqual(rulesOf("package-lock.json", `      "resolved": "${random}",`), []);
    assert.deepEqual(rulesOf("dist/app.min.js", `var a="${random}"`), []);
    // The same line elsewhere is flagged, so the lockfile rule is what kept it quiet.
    assert.deepEqual(rulesOf("src/a.json", `      "resolved": "${random}",`), ["high-entropy-base64"]);
  });

  it("mask keeps the prefix only", () => {
    assert.equal(mask("abcdefghijkl", 3), "abc**** (12 characters)");
    assert.equal(mask("abcdefghijkl", 0), "**** (12 characters)");
  });
});
