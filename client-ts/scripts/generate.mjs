// Writes src/schema.ts, the types of the service's API, from its OpenAPI schema.
//
//   npm run generate -- <schema.yaml|schema.json> [output, src/schema.ts by default]
//
// The schema comes from the service: `python manage.py spectacular --file schema.yaml` (or
// GET /api/schema/). The Python suite (tests/client_ts) regenerates the file from the service's
// current schema and fails when the committed one differs.
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const HEADER = `/**
 * The memory service's API (OpenAPI 3), as TypeScript types: \`paths\` by address and method,
 * \`components["schemas"]\` by name.
 *
 * Generated from the service's schema by \`npm run generate -- <schema file>\`: do not edit.
 */

`;

const [source, target = "src/schema.ts"] = process.argv.slice(2);
if (!source) {
  console.error("usage: npm run generate -- <schema.yaml|schema.json> [output, src/schema.ts by default]");
  process.exit(2);
}
const ast = await openapiTS(pathToFileURL(resolve(source)), { defaultNonNullable: false, silent: true });
await writeFile(resolve(target), HEADER + astToString(ast));
