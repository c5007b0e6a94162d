// How a call's project is settled, and how a client's roots become project ids,
// without a server (test/projects.test.ts drives them through one).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WardenError } from "../errors.ts";
import { projectsOfClientRoots, resolveProject, selectionMode } from "./projects.ts";

const loose = { strict: false, header: null };

function refusal(run: () => unknown): WardenError {
  try {
    run();
  } catch (error) {
    if (error instanceof WardenError) return error;
    throw error;
  }
  assert.fail("expected a WardenError");
}

describe("resolveProject", () => {
  it("takes the argument, then the header, then the first project", () => {
    assert.equal(resolveProject(["a", "b"], "b", { strict: true, header: "a" }), "b");
    assert.equal(resolveProject(["a", "b"], undefined, { strict: true, header: "b" }), "b");
    assert.equal(resolveProject(["a", "b"], undefined, loose), "a");
    assert.equal(resolveProject(["only"], undefined, { strict: true, header: null }), "only");
  });

  it("refuses an unknown id, from the argument or the header, with the ids the caller may use", () => {
    const fromArgument = refusal(() => resolveProject(["a", "b"], "c", { strict: false, header: "a" }));
    assert.equal(fromArgument.code, "project_unknown");
    assert.deepEqual(fromArgument.details, { project_id: "c", projects: ["a", "b"], truncated: false });
    const fromHeader = refusal(() => resolveProject(["a"], undefined, { strict: false, header: "z" }));
    assert.match(fromHeader.message, /^Unknown project "z" \(from the X-MCP-Project header\): /);
  });

  it("says why none can be chosen: no project at all, or several under strict selection", () => {
    assert.deepEqual(refusal(() => resolveProject([], undefined, loose)).details, {
      reason: "no-default",
      projects: [],
      truncated: false,
    });
    const several = refusal(() => resolveProject(["a", "b"], undefined, { strict: true, header: null }));
    assert.equal(several.code, "project_ambiguous");
    assert.equal(several.details?.reason, "multi-project-implicit");
    assert.deepEqual(
      [selectionMode([], true), selectionMode(["a"], true), selectionMode(["a", "b"], false)],
      ["none", "single", "default"],
    );
    assert.equal(selectionMode(["a", "b"], true), "strict");
  });
});

describe("projectsOfClientRoots", () => {
  const pathOf = (url: URL) => decodeURIComponent(url.pathname);

  it("names each file: root by its name, else its directory, as a project id; a name taken gets a number", () => {
    const { specs, refused } = projectsOfClientRoots([
      { uri: "file:///work/Web%20App", name: "Web App!" },
      { uri: "file:///work/lib/" },
      { uri: "file:///other/lib" },
      { uri: "file:///x/9lives", name: "  " },
      { uri: "file:///" },
    ], pathOf);
    assert.deepEqual(specs, [
      { id: "web-app", path: "/work/Web App" },
      { id: "lib", path: "/work/lib/" },
      { id: "lib-2", path: "/other/lib" },
      { id: "lives", path: "/x/9lives" },
      { id: "project", path: "/" },
    ]);
    assert.deepEqual(refused, []);
  });

  it("leaves out what is not a file: URI, saying why", () => {
    const { specs, refused } = projectsOfClientRoots([
      { uri: "https://example.com/repo" },
      { uri: "not a uri" },
    ], pathOf);
    assert.deepEqual(specs, []);
    assert.deepEqual(refused, [
      { uri: "https://example.com/repo", problem: "not a file: URI (MCP roots are file: URIs)" },
      { uri: "not a uri", problem: "not a URI" },
    ]);
  });
});
