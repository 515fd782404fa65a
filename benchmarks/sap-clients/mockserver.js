// SAP's Fiori elements mock server (@sap-ux/fe-mockserver-core, used as a library) serving one
// OData service from its EDMX and a folder of JSON mock data (EntitySet.json, a JSON list each),
// on loopback, until it is stopped. Run by benchmarks/bench_sap_clients.py for the side-by-side
// with kg serve; see README.md.
//
// Usage: node mockserver.js PORT URL_PATH METADATA_XML MOCKDATA_DIR
// Prints "listening PORT" once the service is ready.
'use strict';

const http = require('http');
const FEMockserver = require('@sap-ux/fe-mockserver-core').default;

async function main() {
  const [port, urlPath, metadataPath, mockdataPath] = process.argv.slice(2);
  if (!mockdataPath) {
    console.error('usage: node mockserver.js PORT URL_PATH METADATA_XML MOCKDATA_DIR');
    process.exit(2);
  }
  const mockserver = new FEMockserver({
    services: [{ urlPath, metadataPath, mockdataPath, generateMockData: false, watch: false, noETag: false, validateETag: false }],
    annotations: [],
    logger: { info() {}, warn() {}, error: console.error, debug() {}, verbose() {}, silly() {} }
  });
  await mockserver.isReady;
  const router = mockserver.getRouter();
  const server = http.createServer((req, res) =>
    router(req, res, error => {
      res.statusCode = error ? 500 : 404;
      res.end(error ? String(error) : 'not found');
    })
  );
  server.keepAliveTimeout = 60000;
  server.listen(Number(port), '127.0.0.1', () => console.log(`listening ${port}`));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch(error => {
  console.error(error);
  process.exit(1);
});
