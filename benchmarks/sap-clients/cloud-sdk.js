// The SAP Cloud SDK for JavaScript (typed OData V2 client generated from SAP's
// API_SALES_ORDER_SRV.edmx) against a running kg serve: every step is a call a user of the SDK
// writes, sent as the SDK sends it (its own CSRF token fetch, its own ETag handling).
//
// Usage: node cloud-sdk.js BASE_URL [OUT.json]   (BASE_URL e.g. http://127.0.0.1:8080; the
// service path is the SDK's). Writes one JSON object, {"sdk": version, "node": version,
// "steps": [{"step", "ok", "detail" | "error"}]}, to OUT.json, else to stdout (where the SDK
// also logs its warnings).
// Run by benchmarks/bench_sap_clients.py, which starts the server; see README.md.
'use strict';

const BigNumber = require('bignumber.js');
const { desc } = require('@sap-cloud-sdk/odata-v2');
const { apiSalesOrderSrv } = require('./generated/API_SALES_ORDER_SRV');

const destination = { url: process.argv[2] };
if (!destination.url) {
  console.error('usage: node cloud-sdk.js BASE_URL [OUT.json]');
  process.exit(2);
}
const { salesOrderApi, salesOrderItemApi, batch, changeset, operations } = apiSalesOrderSrv();
const SO = salesOrderApi.schema;
const ITEM = salesOrderItemApi.schema;

/** The server's answer behind an SDK error: status and OData error, as the SDK's users read it. */
function explain(error) {
  let cause = error;
  while (cause && cause.cause && !cause.response) cause = cause.cause;
  const response = cause && cause.response;
  if (!response) return String(error.stack || error).split('\n').slice(0, 4).join(' | ');
  const body = response.data && response.data.error;
  const message = body ? (body.message && body.message.value) || body.message : JSON.stringify(response.data);
  return `HTTP ${response.status}: ${String(message).slice(0, 400)}`;
}

/** The OData error of a rejected call as the SDK exposes it (error.cause.response.data.error). */
function odataError(error) {
  let cause = error;
  while (cause && !cause.response) cause = cause.cause;
  return cause ? { status: cause.response.status, error: cause.response.data && cause.response.data.error } : null;
}

const steps = [];
async function step(name, run) {
  try {
    const detail = await run();
    steps.push({ step: name, ok: true, detail });
  } catch (error) {
    steps.push({ step: name, ok: false, error: explain(error) });
  }
}

function check(condition, message) {
  if (!condition) throw new Error(`unexpected answer: ${message}`);
}

const ITEMS = () => [
  salesOrderItemApi.entityBuilder().material('0000000001').requestedQuantity(new BigNumber(2)).requestedQuantityUnit('PC').build(),
  salesOrderItemApi.entityBuilder().material('0000000002').requestedQuantity(new BigNumber(1)).requestedQuantityUnit('PC').build()
];

function newOrder() {
  return salesOrderApi.entityBuilder().salesOrderType('OR').soldToParty('0000000001').purchaseOrderByCustomer('SDK').toItem(ITEMS()).build();
}

async function main() {
  await step('getAll with filter, orderBy, top, select', async () => {
    const orders = await salesOrderApi
      .requestBuilder()
      .getAll()
      .select(SO.SALES_ORDER, SO.SALES_ORDER_TYPE, SO.SOLD_TO_PARTY)
      .filter(SO.SALES_ORDER.greaterThan('0000000002'), SO.SALES_ORDER.lessOrEqual('0000000010'))
      .orderBy(desc(SO.SALES_ORDER))
      .top(3)
      .execute(destination);
    const keys = orders.map(o => o.salesOrder);
    check(JSON.stringify(keys) === JSON.stringify(['0000000010', '0000000009', '0000000008']), keys.join(','));
    return `${orders.length} orders: ${keys.join(', ')}`;
  });

  await step('count with filter', async () => {
    const count = await salesOrderApi.requestBuilder().getAll().filter(SO.SALES_ORDER.lessOrEqual('0000000005')).count().execute(destination);
    check(count === 5, `count ${count}`);
    return `count ${count}`;
  });

  await step('getByKey', async () => {
    const order = await salesOrderApi.requestBuilder().getByKey('0000000003').execute(destination);
    check(order.salesOrder === '0000000003', order.salesOrder);
    check(order.versionIdentifier, 'no ETag read');
    return `SalesOrder ${order.salesOrder}, ETag ${order.versionIdentifier}, LastChangeDateTime ${order.lastChangeDateTime && order.lastChangeDateTime.toISOString()}`;
  });

  await step('getByKey with expand to_Item and select', async () => {
    const order = await salesOrderApi
      .requestBuilder()
      .getByKey('0000000003')
      .select(SO.SALES_ORDER, SO.TO_ITEM.select(ITEM.SALES_ORDER_ITEM, ITEM.MATERIAL))
      .execute(destination);
    check(order.toItem.length > 0, 'no items');
    const item = order.toItem[0];
    check(item.material !== undefined && item.requestedQuantity === undefined, JSON.stringify(item));
    return `${order.toItem.length} items, first ${item.salesOrderItem} ${item.material}`;
  });

  await step('getAll with filter on a navigation (items of one order)', async () => {
    const items = await salesOrderItemApi.requestBuilder().getAll().filter(ITEM.SALES_ORDER.equals('0000000003')).execute(destination);
    check(items.length > 0 && items.every(i => i.salesOrder === '0000000003'), `${items.length} items`);
    return `${items.length} items of 0000000003`;
  });

  let created;
  await step('create with deep insert (items in the answer)', async () => {
    created = await salesOrderApi.requestBuilder().create(newOrder()).execute(destination);
    check(created.salesOrder, 'no key');
    check(created.toItem.length === 2, `toItem has ${created.toItem.length} items`);
    return `SalesOrder ${created.salesOrder} with items ${created.toItem.map(i => `${i.salesOrderItem}:${i.material}`).join(', ')}`;
  });

  await step('create a child with asChildOf (POST A_SalesOrder(key)/to_Item)', async () => {
    check(created, 'no order was created');
    const item = salesOrderItemApi.entityBuilder().material('0000000003').requestedQuantity(new BigNumber(5)).requestedQuantityUnit('PC').build();
    const child = await salesOrderItemApi.requestBuilder().create(item).asChildOf(created, SO.TO_ITEM).execute(destination);
    check(child.salesOrder === created.salesOrder, `${child.salesOrder}`);
    return `item ${child.salesOrder}/${child.salesOrderItem}`;
  });

  await step('update (PATCH with the ETag read)', async () => {
    const order = await salesOrderApi.requestBuilder().getByKey('0000000003').execute(destination);
    const read = order.versionIdentifier; // the SDK puts the ETag of the 204 into the entity it updated
    order.purchaseOrderByCustomer = 'PO-SDK-PATCH';
    await salesOrderApi.requestBuilder().update(order).execute(destination);
    const again = await salesOrderApi.requestBuilder().getByKey('0000000003').execute(destination);
    check(again.purchaseOrderByCustomer === 'PO-SDK-PATCH', again.purchaseOrderByCustomer);
    check(again.versionIdentifier !== read && again.versionIdentifier === order.versionIdentifier, 'ETag');
    return `PurchaseOrderByCustomer now ${again.purchaseOrderByCustomer}, ETag ${read} -> ${again.versionIdentifier}`;
  });

  await step('update with replaceWholeEntityWithPut (PUT of the entity read)', async () => {
    const order = await salesOrderApi.requestBuilder().getByKey('0000000004').execute(destination);
    order.purchaseOrderByCustomer = 'PO-SDK-PUT';
    await salesOrderApi.requestBuilder().update(order).replaceWholeEntityWithPut().execute(destination);
    const again = await salesOrderApi.requestBuilder().getByKey('0000000004').execute(destination);
    check(again.purchaseOrderByCustomer === 'PO-SDK-PUT', again.purchaseOrderByCustomer);
    return `PurchaseOrderByCustomer now ${again.purchaseOrderByCustomer}`;
  });

  await step('update with a stale ETag is refused (412)', async () => {
    // The SDK keeps the ETag of the 204 in the entity it updated; a second copy read before the
    // first update still holds the old one.
    const first = await salesOrderApi.requestBuilder().getByKey('0000000005').execute(destination);
    const second = await salesOrderApi.requestBuilder().getByKey('0000000005').execute(destination);
    first.purchaseOrderByCustomer = 'FIRST';
    await salesOrderApi.requestBuilder().update(first).execute(destination);
    second.purchaseOrderByCustomer = 'SECOND';
    try {
      await salesOrderApi.requestBuilder().update(second).execute(destination);
    } catch (error) {
      const answer = odataError(error);
      check(answer && answer.status === 412, JSON.stringify(answer));
      return `412 ${answer.error.code}`;
    }
    throw new Error('the stale ETag was accepted');
  });

  await step('delete (with the ETag read)', async () => {
    check(created, 'no order was created');
    const order = await salesOrderApi.requestBuilder().getByKey(created.salesOrder).execute(destination);
    await salesOrderApi.requestBuilder().delete(order).execute(destination);
    try {
      await salesOrderApi.requestBuilder().getByKey(created.salesOrder).execute(destination);
    } catch (error) {
      const answer = odataError(error);
      check(answer && answer.status === 404, JSON.stringify(answer));
      return `deleted ${created.salesOrder}; a read then answers 404`;
    }
    throw new Error('still there after delete');
  });

  await step('batch: a read and a change set with a create', async () => {
    const read = salesOrderApi.requestBuilder().getByKey('0000000006');
    const create = salesOrderApi.requestBuilder().create(newOrder());
    const responses = await batch(read, changeset(create)).execute(destination);
    check(responses.length === 2, `${responses.length} responses`);
    check(responses.every(r => r.isSuccess()), responses.map(r => r.httpCode).join(','));
    const [first, second] = responses;
    const order = first.as(salesOrderApi)[0];
    const made = second.responses[0].as(salesOrderApi);
    check(order.salesOrder === '0000000006', order.salesOrder);
    check(made.toItem.length === 2, `${made.toItem.length} items`);
    return `read ${order.salesOrder}; created ${made.salesOrder} with ${made.toItem.length} items`;
  });

  await step('batch: a failing change set is rejected as a whole', async () => {
    const good = salesOrderApi.requestBuilder().create(newOrder());
    const bad = salesOrderApi.requestBuilder().create(salesOrderApi.entityBuilder().salesOrderType('ZZZ').soldToParty('0000000001').build());
    const before = await salesOrderApi.requestBuilder().getAll().count().execute(destination);
    const responses = await batch(changeset(good, bad)).execute(destination);
    const after = await salesOrderApi.requestBuilder().getAll().count().execute(destination);
    check(responses.length === 1 && !responses[0].isSuccess(), responses.map(r => r.httpCode).join(','));
    check(before === after, `${before} -> ${after} orders`);
    return `change set answered ${responses[0].httpCode}; ${before} orders before and after`;
  });

  await step('function import releaseApprovalRequest', async () => {
    const result = await operations.releaseApprovalRequest({ salesOrder: '0000000007' }).execute(destination);
    return `answered ${JSON.stringify(result).slice(0, 120)}`;
  });

  await step('error parsing: an invalid create is a 400 with SAP error details', async () => {
    const bad = salesOrderApi.entityBuilder().salesOrderType('ZZZ').soldToParty('NOSUCHCUST').build();
    try {
      await salesOrderApi.requestBuilder().create(bad).execute(destination);
    } catch (error) {
      const answer = odataError(error);
      check(answer && answer.status === 400, JSON.stringify(answer));
      const details = (answer.error.innererror && answer.error.innererror.errordetails) || [];
      check(details.length > 0, 'no errordetails');
      return `400 ${answer.error.code}: ${details.map(d => `${d.code} at ${d.target}`).join('; ')}`;
    }
    throw new Error('the invalid create was accepted');
  });

  const { version } = require('@sap-cloud-sdk/odata-v2/package.json');
  const text = JSON.stringify({ sdk: version, node: process.version, steps }, null, 2) + '\n';
  if (process.argv[3]) require('fs').writeFileSync(process.argv[3], text);
  else process.stdout.write(text);
}

main().catch(error => {
  console.error(error);
  process.exit(1);
});
