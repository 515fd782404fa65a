// SAP's Fiori tools' catalog client (@sap-ux/axios-extension) against a running kg serve:
// the V2 catalog (IWFND/CATALOGSERVICE;v=2 ServiceCollection) and the V4 catalog
// (iwfnd/catalog/0002 ServiceGroups with DefaultSystem and Services), as the Fiori generator lists a
// system's services. Usage: node catalog.js BASE_URL OUT.json
"use strict";
const fs = require("fs");
const { createForAbap, ODataVersion } = require("@sap-ux/axios-extension");

async function main() {
  const [base, out] = process.argv.slice(2);
  const provider = createForAbap({ baseURL: base });
  const result = {};
  for (const [name, version] of [["v2", ODataVersion.v2], ["v4", ODataVersion.v4]]) {
    try {
      const services = await provider.catalog(version).listServices();
      result[name] = { ok: true, services: services.map((s) => ({ id: s.id, path: s.path, odataVersion: s.odataVersion })) };
    } catch (e) {
      result[name] = { ok: false, error: String((e && e.message) || e) };
    }
  }
  fs.writeFileSync(out, JSON.stringify(result, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
