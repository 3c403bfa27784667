import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { promisify } from "node:util";

import { apiKey, serviceUrl } from "./support.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));

describe("the README", () => {
  it("shows an agent that runs as written against the service", async () => {
    const readme = await readFile(`${PACKAGE}README.md`, "utf8");
    const section = readme.slice(readme.indexOf("## An agent's memory in a few lines"));
    const example = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(example, "the README's agent example (a js block) is missing");
    // Inside the package, "memory-client" resolves to the package itself (its exports, dist/).
    const script = `${PACKAGE}build-test/readme-agent.mjs`;
    await writeFile(script, example);

    const { stdout } = await promisify(execFile)(process.execPath, [script], {
      env: { ...process.env, MEMORY_URL: serviceUrl, MEMORY_API_KEY: apiKey },
      timeout: 60_000,
    });

    assert.match(stdout, /human And tomorrow\?/);
    assert.match(stdout, /ai Tomorrow: Casa Patas, flamenco at 22:00\./);
    assert.match(stdout, /404 not_found/);
  });
});
