// node:path as the build (scripts/build.mjs) gives it to the bundles: node's own under node, where node has loaded it
// before any of warden's code runs, and on Windows; under deno on other systems, path-browserify (node's own posix
// path, ported). deno's node:path loads a layer of its node compatibility that costs about 15 ms of a start-up of
// about 200 (a script that imports it against one that does not: 45 against 30 ms), and the built-in tools, the
// code graph and globby import it too. CommonJS, so that `require("path")` in a bundled dependency and
// `import path from "node:path"` in warden get the same object.
const posix = require("path-browserify");

const native = () => process.getBuiltinModule("node:path");

module.exports = globalThis.Deno && globalThis.Deno.build.os !== "windows"
  ? Object.freeze({
    ...posix,
    posix,
    get win32() {
      return native().win32;
    },
  })
  : native();
