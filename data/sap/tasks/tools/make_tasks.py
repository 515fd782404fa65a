"""Writes data/sap/tasks/tasks.jsonl from the task specs below (run from the repository root).

Each spec is a task's instruction, its reference calls and either the fields whose values the answer
must name (read tasks) or a state goal (write tasks). The reference calls run against an in-process
``kg serve`` of the task store (argument 1); the expected answer values are read from what they
return, so they are the server's values, not typed in here. A call URL may name a value an earlier
call returned: ``{0[DeliveryDocument]}`` is field DeliveryDocument of call 0's first record.

    .venv/bin/python data/sap/tasks/tools/make_tasks.py STORE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from processkg.evaluate.tasks import check_answer, load_tasks
from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient

OUT = Path(__file__).resolve().parents[1] / "tasks.jsonl"
V2 = "/sap/opu/odata/sap/"
SO = V2 + "API_SALES_ORDER_SRV/"
DLV = V2 + "API_OUTBOUND_DELIVERY_SRV/"
BIL = V2 + "API_BILLING_DOCUMENT_SRV/"
PO = V2 + "API_PURCHASEORDER_PROCESS_SRV/"
PR = V2 + "API_PURCHASEREQ_PROCESS_SRV/"
BP = V2 + "API_BUSINESS_PARTNER/"
PRD = V2 + "API_PRODUCT_SRV/"
MO = V2 + "API_MAINTENANCEORDER/"
MN = V2 + "API_MAINTNOTIFICATION/"
IBD = V2 + "API_INBOUND_DELIVERY_SRV/"
QT = V2 + "API_SALES_QUOTATION_SRV/"
RET = V2 + "API_CUSTOMER_RETURN_SRV/"
CMR = V2 + "API_CREDIT_MEMO_REQUEST_SRV/"
PRO = V2 + "API_PRODUCTION_ORDER_2_SRV/"
MD = V2 + "API_MATERIAL_DOCUMENT_SRV/"
INV = V2 + "API_SUPPLIERINVOICE_PROCESS/"
PRJ = V2 + "API_ENTERPRISE_PROJECT_0002/"
EQ = V2 + "API_EQUIPMENT/"
V4SO = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/api_salesorder/0001/"
V4PO = "/sap/opu/odata4/sap/api_purchaseorder_2/srvd_a2x/sap/api_purchaseorder_2/0001/"
V4SC = "/sap/opu/odata4/sap/api_salescontract/srvd_a2x/sap/api_salescontract/0001/"


def n(i: int, width: int = 10) -> str:
    return str(i).zfill(width)


def get(url: str) -> dict:
    return {"method": "GET", "url": url}


def read(tid: str, kind: str, text: str, calls: list[str], fields: list[str]) -> dict:
    """A read task: ``fields`` are ``CALL.Field`` whose values the answer must name."""
    return {"id": tid, "kind": kind, "task": text, "reference": [get(c) for c in calls], "fields": fields}


def write(tid: str, kind: str, text: str, calls: list[dict], state: dict) -> dict:
    return {"id": tid, "kind": kind, "task": text, "reference": calls, "state": state}


def post(url: str, body: dict) -> dict:
    return {"method": "POST", "url": url, "body": body}


def patch(url: str, body: dict) -> dict:
    return {"method": "PATCH", "url": url, "body": body}


LOOKUPS = [
    (
        "Which material is ordered in sales order {k}, and in what quantity?",
        SO + "A_SalesOrder('{k}')/to_Item",
        ["Material", "RequestedQuantity"],
        3,
    ),
    (
        "What item category does the item of sales order {k} have?",
        SO + "A_SalesOrder('{k}')/to_Item",
        ["SalesOrderItemCategory"],
        7,
    ),
    (
        "From which plant is the item of sales order {k} produced, and what is its net amount?",
        SO + "A_SalesOrder('{k}')/to_Item",
        ["ProductionPlant", "NetAmount"],
        12,
    ),
    (
        "Billing document {k}: what is the net amount of its item and which plant did the goods come from?",
        BIL + "A_BillingDocument('{k}')/to_Item",
        ["NetAmount", "Plant"],
        4,
    ),
    (
        "Which material was billed on billing document {k}, and in what quantity?",
        BIL + "A_BillingDocument('{k}')/to_Item",
        ["Material", "BillingQuantity"],
        9,
    ),
    (
        "Outbound delivery {k}: from which plant and storage location is its item shipped?",
        DLV + "A_OutbDeliveryHeader('{k}')/to_DeliveryDocumentItem",
        ["Plant", "StorageLocation"],
        5,
    ),
    (
        "Which goods movement type will the item of outbound delivery {k} post?",
        DLV + "A_OutbDeliveryHeader('{k}')/to_DeliveryDocumentItem",
        ["GoodsMovementType"],
        11,
    ),
    (
        "Purchase order {k}: for which plant is its item ordered and what is the order quantity?",
        PO + "A_PurchaseOrder('{k}')/to_PurchaseOrderItem",
        ["Plant", "OrderQuantity"],
        6,
    ),
    (
        "What is the net price of the item in purchase order {k}?",
        PO + "A_PurchaseOrder('{k}')/to_PurchaseOrderItem",
        ["NetPriceAmount"],
        14,
    ),
    (
        "In which country and city is the address of business partner {k}?",
        BP + "A_BusinessPartner('{k}')/to_BusinessPartnerAddress",
        ["Country", "CityName"],
        8,
    ),
    (
        "Business partner {k} is also a customer: under which customer name is it kept?",
        BP + "A_BusinessPartner('{k}')/to_Customer",
        ["CustomerName"],
        10,
    ),
    (
        "What is the supplier name of business partner {k}?",
        BP + "A_BusinessPartner('{k}')/to_Supplier",
        ["SupplierName"],
        13,
    ),
    (
        "What is the description of product {k}, and in which language is it written?",
        PRD + "A_Product('{k}')/to_Description",
        ["ProductDescription", "Language"],
        2,
    ),
    (
        "Product {k}: which plant is it planned in, and with which MRP type?",
        PRD + "A_Product('{k}')/to_Plant",
        ["Plant", "MRPType"],
        15,
    ),
    (
        "Maintenance order {k}: what is the description of its operation and its control key?",
        MO + "MaintenanceOrder('{k}')/to_MaintenanceOrderOperation",
        ["OperationDescription", "OperationControlKey"],
        3,
    ),
    (
        "What does the item of maintenance notification {k} say?",
        MN + "MaintenanceNotification('{k}')/to_Item",
        ["MaintNotifItemText"],
        17,
    ),
    (
        "Purchase requisition {k}: which material is requested, for which plant?",
        PR + "A_PurchaseRequisitionHeader('{k}')/to_PurchaseReqnItem",
        ["Material", "Plant"],
        4,
    ),
    (
        "Inbound delivery {k}: into which plant and storage location does its item go?",
        IBD + "A_InbDeliveryHeader('{k}')/to_DeliveryDocumentItem",
        ["Plant", "StorageLocation"],
        9,
    ),
    (
        "Sales quotation {k}: which material is quoted, and what is its item category?",
        QT + "A_SalesQuotation('{k}')/to_Item",
        ["Material", "SalesQuotationItemCategory"],
        6,
    ),
    (
        "Customer return {k}: which material is coming back, and in what quantity?",
        RET + "A_CustomerReturn('{k}')/to_Item",
        ["Material", "RequestedQuantity"],
        16,
    ),
    (
        "Credit memo request {k}: what is the net amount of its item?",
        CMR + "A_CreditMemoRequest('{k}')/to_Item",
        ["NetAmount"],
        18,
    ),
    (
        "Production order {k}: which material does its order item produce, and in which plant?",
        PRO + "A_ProductionOrder_2('{k}')/to_ProductionOrderItem",
        ["Material", "ProductionPlant"],
        7,
    ),
    (
        "Supplier invoice {k}: which purchase order does its item refer to, and for what amount?",
        INV + "A_SuplrInvcItemPurOrdRef?$filter=SupplierInvoice eq '{k}'",
        ["PurchaseOrder", "SupplierInvoiceItemAmount"],
        5,
    ),
    (
        "Material document {k}: which goods movement type and plant does its item have?",
        MD + "A_MaterialDocumentItem?$filter=MaterialDocument eq '{k}'",
        ["GoodsMovementType", "Plant"],
        12,
    ),
    (
        "Sales order {k} (new sales order API): which product is on its item, and what is the item category?",
        V4SO + "SalesOrder('{k}')/_Item",
        ["Product", "SalesOrderItemCategory"],
        8,
    ),
    (
        "Purchase order {k} (new purchase order API): which plant receives its item?",
        V4PO + "PurchaseOrder('{k}')/_PurchaseOrderItem",
        ["Plant"],
        10,
    ),
    (
        "Sales contract {k}: what is the item category of its item?",
        V4SC + "SalesContract('{k}')/_Item",
        ["SalesContractItemCategory"],
        11,
    ),
    (
        "What is customer group {k2} called?",
        V2 + "API_CUSTOMERGROUP_SRV/A_CustomerGroup('{k2}')/to_Text",
        ["CustomerGroupName"],
        5,
    ),
    (
        "What is the name of product group {k9}?",
        V2 + "API_PRODUCTGROUP_SRV/A_ProductGroup('{k9}')/to_Text",
        ["MaterialGroupName"],
        6,
    ),
    (
        "What is sales district {k6} called?",
        V2 + "API_SALESDISTRICT_SRV/A_SalesDistrict('{k6}')/to_Text",
        ["SalesDistrictName"],
        7,
    ),
    (
        "Purchasing info record {k}: for which plant does it hold purchasing data, and what is the minimum order quantity?",
        V2 + "API_INFORECORD_PROCESS_SRV/A_PurchasingInfoRecord('{k}')/to_PurgInfoRecdOrgPlantData",
        ["Plant", "MinimumPurchaseOrderQuantity"],
        8,
    ),
    (
        "Which master warranty covers functional location {k}?",
        V2 + "API_FUNCTIONALLOCATION/FunctionalLocation('{k}')/to_Warranty",
        ["MasterWarranty"],
        9,
    ),
    (
        "What is the name of G/L account {k} in chart of accounts {k4}?",
        V2
        + "API_GLACCOUNTINCHARTOFACCOUNTS_SRV/A_GLAccountInChartOfAccounts(GLAccount='{k}',ChartOfAccounts='{k4}')/to_Text",
        ["GLAccountName"],
        10,
    ),
    (
        "Material {k}: in which storage location is its stock, and how much is in the warehouse?",
        V2 + "API_MATERIAL_STOCK_SRV/A_MaterialStock('{k}')/to_MatlStkInAcctMod",
        ["StorageLocation", "MatlWrhsStkQtyInMatlBaseUnit"],
        11,
    ),
]


def lookups() -> list[dict]:
    tasks = []
    for i, (text, url, fields, rec) in enumerate(LOOKUPS, 1):
        keys = {"k": n(rec), "k2": n(rec, 2), "k4": n(rec, 4), "k6": n(rec, 6), "k9": n(rec, 9)}
        calls = [url.format(**keys)]
        tasks.append(read(f"lookup-{i:03d}", "lookup", text.format(**keys), calls, [f"0.{f}" for f in fields]))
    return tasks


def process_reads() -> list[dict]:
    f = "?$filter="
    specs = [
        (
            "The goods of sales order {k} have been shipped. Which outbound delivery carries them, from which shipping point, and what is its gross weight?",
            [
                DLV + "A_OutbDeliveryItem" + f + "ReferenceSDDocument eq '{k}'",
                DLV + "A_OutbDeliveryHeader('{{0[DeliveryDocument]}}')",
            ],
            ["0.DeliveryDocument", "1.ShippingPoint", "1.HeaderGrossWeight"],
            3,
        ),
        (
            "Outbound delivery {k} has been billed. Which billing document was created for it, and what is its total net amount?",
            [
                BIL + "A_BillingDocumentItem" + f + "ReferenceSDDocument eq '{k}'",
                BIL + "A_BillingDocument('{{0[BillingDocument]}}')",
            ],
            ["0.BillingDocument", "1.TotalNetAmount"],
            5,
        ),
        (
            "Sales order {k} was invoiced. Which billing document holds it, and which billing type was used?",
            [
                BIL + "A_BillingDocumentItem" + f + "SalesDocument eq '{k}'",
                BIL + "A_BillingDocument('{{0[BillingDocument]}}')",
            ],
            ["0.BillingDocument", "1.BillingDocumentType"],
            7,
        ),
        (
            "Sales order {k} was delivered and the delivery billed. Which billing document was created, of which billing type, and for what gross amount?",
            [
                DLV + "A_OutbDeliveryItem" + f + "ReferenceSDDocument eq '{k}'",
                BIL + "A_BillingDocumentItem" + f + "ReferenceSDDocument eq '{{0[DeliveryDocument]}}'",
                BIL + "A_BillingDocument('{{1[BillingDocument]}}')",
            ],
            ["1.BillingDocument", "2.BillingDocumentType", "2.TotalGrossAmount"],
            9,
        ),
        (
            "Purchase requisition {k} was converted into a purchase order. Which purchase order, of which order type and in which currency?",
            [
                PO + "A_PurchaseOrderItem" + f + "PurchaseRequisition eq '{k}'",
                PO + "A_PurchaseOrder('{{0[PurchaseOrder]}}')",
            ],
            ["0.PurchaseOrder", "1.PurchaseOrderType", "1.DocumentCurrency"],
            4,
        ),
        (
            "Customer return {k} was credited. Which billing document settled the credit memo request created for it, and which billing type does it have?",
            [
                CMR + "A_CreditMemoRequestItem" + f + "ReferenceSDDocument eq '{k}'",
                BIL + "A_BillingDocumentItem" + f + "SalesDocument eq '{{0[CreditMemoRequest]}}'",
                BIL + "A_BillingDocument('{{1[BillingDocument]}}')",
            ],
            ["1.BillingDocument", "2.BillingDocumentType"],
            6,
        ),
        (
            "Goods were received for purchase order {k}. Which material document records the receipt, and with which movement type?",
            [MD + "A_MaterialDocumentItem" + f + "PurchaseOrder eq '{k}'"],
            ["0.MaterialDocument", "0.GoodsMovementType"],
            17,
        ),
        (
            "The supplier invoiced purchase order {k}. Which supplier invoice is it, and what is its gross amount?",
            [
                INV + "A_SuplrInvcItemPurOrdRef" + f + "PurchaseOrder eq '{k}'",
                INV + "A_SupplierInvoice(SupplierInvoice='{{0[SupplierInvoice]}}',FiscalYear='{{0[FiscalYear]}}')",
            ],
            ["0.SupplierInvoice", "1.InvoiceGrossAmount"],
            10,
        ),
        (
            "Billing document {k}: who is the payer? Give the payer's business partner name.",
            [BIL + "A_BillingDocument('{k}')", BP + "A_BusinessPartner('{{0[PayerParty]}}')"],
            ["0.PayerParty", "1.BusinessPartnerFullName"],
            11,
        ),
        (
            "Outbound delivery {k}: which sales order does it fulfil, and what is that order's customer reference?",
            [
                DLV + "A_OutbDeliveryItem" + f + "DeliveryDocument eq '{k}'",
                SO + "A_SalesOrder('{{0[ReferenceSDDocument]}}')",
            ],
            ["0.ReferenceSDDocument", "1.PurchaseOrderByCustomer"],
            12,
        ),
        (
            "Customer return {k} led to a credit memo request. Which one, and what is its total net amount?",
            [
                CMR + "A_CreditMemoRequestItem" + f + "ReferenceSDDocument eq '{k}'",
                CMR + "A_CreditMemoRequest('{{0[CreditMemoRequest]}}')",
            ],
            ["0.CreditMemoRequest", "1.TotalNetAmount"],
            13,
        ),
        (
            "Quotation {k} was accepted and ordered. Which sales order was created from it, and what is that order's overall processing status?",
            [SO + "A_SalesOrderItem" + f + "ReferenceSDDocument eq '{k}'", SO + "A_SalesOrder('{{0[SalesOrder]}}')"],
            ["0.SalesOrder", "1.OverallSDProcessStatus"],
            14,
        ),
        (
            "Purchase order {k}: in which country is the supplier's address?",
            [
                PO + "A_PurchaseOrder('{k}')",
                BP + "A_BusinessPartnerAddress" + f + "BusinessPartner eq '{{0[Supplier]}}'",
            ],
            ["0.Supplier", "1.Country"],
            15,
        ),
        (
            "Who is the sold-to customer of sales order {k}? Give the customer's full name and the country of their address.",
            [
                SO + "A_SalesOrder('{k}')",
                BP + "A_BusinessPartner('{{0[SoldToParty]}}')",
                BP + "A_BusinessPartnerAddress" + f + "BusinessPartner eq '{{0[SoldToParty]}}'",
            ],
            ["1.BusinessPartnerFullName", "2.Country"],
            16,
        ),
        (
            "Purchase order {k}: what is the name of the supplier it is placed with?",
            [PO + "A_PurchaseOrder('{k}')", BP + "A_Supplier('{{0[Supplier]}}')"],
            ["1.SupplierName"],
            17,
        ),
        (
            "Outbound delivery {k}: in which country and city does the ship-to party live?",
            [
                DLV + "A_OutbDeliveryHeader('{k}')",
                BP + "A_BusinessPartnerAddress" + f + "BusinessPartner eq '{{0[ShipToParty]}}'",
            ],
            ["1.Country", "1.CityName"],
            18,
        ),
        (
            "Billing document {k}: what customer reference (the customer's purchase order number) does the underlying sales order carry?",
            [
                BIL + "A_BillingDocumentItem" + f + "BillingDocument eq '{k}'",
                SO + "A_SalesOrder('{{0[SalesDocument]}}')",
            ],
            ["1.PurchaseOrderByCustomer"],
            2,
        ),
        (
            "Outbound delivery {k} was goods-issued. Which material document records the goods issue, and from which storage location?",
            [MD + "A_MaterialDocumentItem" + f + "Delivery eq '{k}'"],
            ["0.MaterialDocument", "0.StorageLocation"],
            15,
        ),
        (
            "Supplier invoice {k}: which purchase order was invoiced, and which purchasing organization placed it?",
            [
                INV + "A_SuplrInvcItemPurOrdRef" + f + "SupplierInvoice eq '{k}'",
                PO + "A_PurchaseOrder('{{0[PurchaseOrder]}}')",
            ],
            ["0.PurchaseOrder", "1.PurchasingOrganization"],
            6,
        ),
        (
            "Customer {k} placed sales orders. Which order is it, and what is its total net amount?",
            [SO + "A_SalesOrder" + f + "SoldToParty eq '{k}'"],
            ["0.SalesOrder", "0.TotalNetAmount"],
            20,
        ),
        (
            "Sales order {k}: which item category does the billed item carry in the invoice, and what is the billing document?",
            [BIL + "A_BillingDocumentItem" + f + "SalesDocument eq '{k}'"],
            ["0.BillingDocument", "0.SalesDocumentItemCategory"],
            1,
        ),
        (
            "Purchase order {k} has been received and invoiced. With which movement type was the goods receipt posted, and what amount did the supplier invoice for it?",
            [
                MD + "A_MaterialDocumentItem" + f + "PurchaseOrder eq '{k}'",
                INV + "A_SuplrInvcItemPurOrdRef" + f + "PurchaseOrder eq '{k}'",
            ],
            ["0.MaterialDocument", "0.GoodsMovementType", "1.SupplierInvoiceItemAmount"],
            2,
        ),
    ]
    tasks = []
    for i, (text, calls, fields, rec) in enumerate(specs, 1):
        k = n(rec)
        tasks.append(read(f"process-{i:03d}", "process-read", text.format(k=k), [c.format(k=k) for c in calls], fields))
    return tasks


def ref(i: int, prefix: str) -> str:
    return f"{prefix}-{i:03d}"


def single_writes() -> list[dict]:
    so_area = {"SalesOrganization": "1710", "DistributionChannel": "10", "OrganizationDivision": "00"}
    tasks = []
    specs = [
        (
            "Create a standard sales order for customer {c} in the US sales organization (distribution channel 10, division 00). The customer's purchase order number is {r}.",
            post(
                SO + "A_SalesOrder",
                {"SalesOrderType": "OR", **so_area, "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
            ),
            SO + "A_SalesOrder",
            {"SalesOrderType": "OR", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a rush order for customer {c} in the US sales organization, channel 10, division 00, priced in euros. Customer reference: {r}.",
            post(
                SO + "A_SalesOrder",
                {
                    "SalesOrderType": "RO",
                    **so_area,
                    "SoldToParty": "{c}",
                    "TransactionCurrency": "EUR",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            SO + "A_SalesOrder",
            {"SalesOrderType": "RO", "TransactionCurrency": "EUR", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a standard sales order for customer {c} in the German sales organization (channel 10, division 00), shipped Free Carrier. Customer reference: {r}.",
            post(
                SO + "A_SalesOrder",
                {
                    "SalesOrderType": "OR",
                    "SalesOrganization": "1010",
                    "DistributionChannel": "10",
                    "OrganizationDivision": "00",
                    "SoldToParty": "{c}",
                    "IncotermsClassification": "FCA",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            SO + "A_SalesOrder",
            {"SalesOrganization": "1010", "IncotermsClassification": "FCA", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Record a cash sale for customer {c} in the Chinese sales organization (channel 10, division 00), in Chinese yuan. Reference: {r}.",
            post(
                SO + "A_SalesOrder",
                {
                    "SalesOrderType": "CS",
                    "SalesOrganization": "1310",
                    "DistributionChannel": "10",
                    "OrganizationDivision": "00",
                    "SoldToParty": "{c}",
                    "TransactionCurrency": "CNY",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            SO + "A_SalesOrder",
            {"SalesOrderType": "CS", "TransactionCurrency": "CNY", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Customer {c} gets replacement goods free of charge: create a free-of-charge delivery order in the US sales organization (channel 10, division 00), reference {r}.",
            post(
                SO + "A_SalesOrder",
                {"SalesOrderType": "FD", **so_area, "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
            ),
            SO + "A_SalesOrder",
            {"SalesOrderType": "FD", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a standard sales order for customer {c} in the US sales organization (channel 10, division 00), priced in Japanese yen and delivered duty paid. Customer reference: {r}.",
            post(
                SO + "A_SalesOrder",
                {
                    "SalesOrderType": "OR",
                    **so_area,
                    "SoldToParty": "{c}",
                    "TransactionCurrency": "JPY",
                    "IncotermsClassification": "DDP",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            SO + "A_SalesOrder",
            {"TransactionCurrency": "JPY", "IncotermsClassification": "DDP", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a standard purchase order with supplier {c} for the German company code, purchasing organization 1010, purchasing group 001, in euros.",
            post(
                PO + "A_PurchaseOrder",
                {
                    "PurchaseOrderType": "NB",
                    "Supplier": "{c}",
                    "CompanyCode": "1010",
                    "PurchasingOrganization": "1010",
                    "PurchasingGroup": "001",
                    "DocumentCurrency": "EUR",
                },
            ),
            PO + "A_PurchaseOrder",
            {"PurchaseOrderType": "NB", "Supplier": "{c}", "CompanyCode": "1010", "DocumentCurrency": "EUR"},
        ),
        (
            "Create a stock transport order with supplier {c} in the US company code (purchasing organization 1710, group 001) that is supplied from the German plant, in US dollars.",
            post(
                PO + "A_PurchaseOrder",
                {
                    "PurchaseOrderType": "UB",
                    "Supplier": "{c}",
                    "CompanyCode": "1710",
                    "PurchasingOrganization": "1710",
                    "PurchasingGroup": "001",
                    "SupplyingPlant": "1010",
                    "DocumentCurrency": "USD",
                },
            ),
            PO + "A_PurchaseOrder",
            {"PurchaseOrderType": "UB", "SupplyingPlant": "1010", "DocumentCurrency": "USD"},
        ),
        (
            "Create a standard purchase order with supplier {c} for the Chinese company code (purchasing organization 1310, group 001), in Chinese yuan, delivered Ex Works.",
            post(
                PO + "A_PurchaseOrder",
                {
                    "PurchaseOrderType": "NB",
                    "Supplier": "{c}",
                    "CompanyCode": "1310",
                    "PurchasingOrganization": "1310",
                    "PurchasingGroup": "001",
                    "DocumentCurrency": "CNY",
                    "IncotermsClassification": "EXW",
                },
            ),
            PO + "A_PurchaseOrder",
            {"Supplier": "{c}", "CompanyCode": "1310", "DocumentCurrency": "CNY", "IncotermsClassification": "EXW"},
        ),
        (
            "Report a malfunction: the pump at the US plant is leaking. Use the notification text '{r} pump leaking'.",
            post(
                MN + "MaintenanceNotification",
                {"NotificationType": "M2", "MaintenancePlant": "1710", "NotificationText": "{r} pump leaking"},
            ),
            MN + "MaintenanceNotification",
            {"NotificationType": "M2", "NotificationText": "{r} pump leaking"},
        ),
        (
            "Raise a maintenance request for the German plant with the text '{r} inspect conveyor'.",
            post(
                MN + "MaintenanceNotification",
                {"NotificationType": "M1", "MaintenancePlant": "1010", "NotificationText": "{r} inspect conveyor"},
            ),
            MN + "MaintenanceNotification",
            {"NotificationType": "M1", "NotificationText": "{r} inspect conveyor"},
        ),
        (
            "Open a preventive maintenance order at the US plant described as '{r} quarterly service'.",
            post(
                MO + "MaintenanceOrder",
                {
                    "MaintenanceOrderType": "PM03",
                    "MaintenancePlant": "1710",
                    "MaintenanceOrderDesc": "{r} quarterly service",
                },
            ),
            MO + "MaintenanceOrder",
            {"MaintenanceOrderType": "PM03", "MaintenanceOrderDesc": "{r} quarterly service"},
        ),
        (
            "Open a breakdown maintenance order at the Chinese plant described as '{r} press down'.",
            post(
                MO + "MaintenanceOrder",
                {"MaintenanceOrderType": "PM02", "MaintenancePlant": "1310", "MaintenanceOrderDesc": "{r} press down"},
            ),
            MO + "MaintenanceOrder",
            {"MaintenanceOrderType": "PM02", "MaintenanceOrderDesc": "{r} press down"},
        ),
        (
            "Create a quotation for customer {c} in the US sales organization (channel 10, division 00). The customer's inquiry reference is {r}.",
            post(
                QT + "A_SalesQuotation",
                {"SalesQuotationType": "QT", **so_area, "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
            ),
            QT + "A_SalesQuotation",
            {"SalesQuotationType": "QT", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Customer {c} sends goods back. Create a returns order in the US sales organization (channel 10, division 00) with reference {r}.",
            post(
                RET + "A_CustomerReturn",
                {"CustomerReturnType": "RE", **so_area, "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
            ),
            RET + "A_CustomerReturn",
            {"CustomerReturnType": "RE", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Customer {c} was overcharged. Create a credit memo request in the German sales organization (channel 10, division 00) with reference {r}.",
            post(
                CMR + "A_CreditMemoRequest",
                {
                    "CreditMemoRequestType": "CR",
                    "SalesOrganization": "1010",
                    "DistributionChannel": "10",
                    "OrganizationDivision": "00",
                    "SoldToParty": "{c}",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            CMR + "A_CreditMemoRequest",
            {"CreditMemoRequestType": "CR", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a standard purchase requisition described as '{r} office chairs'.",
            post(
                PR + "A_PurchaseRequisitionHeader",
                {"PurchaseRequisitionType": "NB", "PurReqnDescription": "{r} office chairs"},
            ),
            PR + "A_PurchaseRequisitionHeader",
            {"PurchaseRequisitionType": "NB", "PurReqnDescription": "{r} office chairs"},
        ),
        (
            "Create a standard sales order (new sales order API) for customer {c} in the US sales organization, channel 10, division 00, in US dollars. Customer reference: {r}.",
            post(
                V4SO + "SalesOrder",
                {
                    "SalesOrderType": "OR",
                    **so_area,
                    "SoldToParty": "{c}",
                    "TransactionCurrency": "USD",
                    "PurchaseOrderByCustomer": "{r}",
                },
            ),
            V4SO + "SalesOrder",
            {"SalesOrderType": "OR", "TransactionCurrency": "USD", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Create a framework order (new purchase order API) with supplier {c} for the US company code, purchasing organization 1710, group 001, in US dollars.",
            post(
                V4PO + "PurchaseOrder",
                {
                    "PurchaseOrderType": "FO",
                    "Supplier": "{c}",
                    "CompanyCode": "1710",
                    "PurchasingOrganization": "1710",
                    "PurchasingGroup": "001",
                    "DocumentCurrency": "USD",
                },
            ),
            V4PO + "PurchaseOrder",
            {"PurchaseOrderType": "FO", "Supplier": "{c}", "DocumentCurrency": "USD"},
        ),
        (
            "Create a quantity contract with customer {c} in the US sales organization (channel 10, division 00). Customer reference {r}.",
            post(
                V4SC + "SalesContract",
                {"SalesContractType": "QC", **so_area, "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
            ),
            V4SC + "SalesContract",
            {"SalesContractType": "QC", "SoldToParty": "{c}", "PurchaseOrderByCustomer": "{r}"},
        ),
        (
            "Business partner {k} moved to Austria. Change the country of its address.",
            patch(BP + "A_BusinessPartnerAddress(BusinessPartner='{k}',AddressID='{a}')", {"Country": "AT"}),
            BP + "A_BusinessPartnerAddress",
            {"BusinessPartner": "{k}", "AddressID": "{a}", "Country": "AT"},
        ),
        (
            "Business partner {k} now corresponds in French. Change its correspondence language.",
            patch(BP + "A_BusinessPartner('{k}')", {"CorrespondenceLanguage": "FR"}),
            BP + "A_BusinessPartner",
            {"BusinessPartner": "{k}", "CorrespondenceLanguage": "FR"},
        ),
    ]
    for i, (text, call, url, where) in enumerate(specs, 1):
        # {a}: the first address of partner {k}; kg serve numbers a partner's two addresses 2k-1 and 2k
        values = {"c": n(i % 19 + 1), "k": n(i % 17 + 2), "a": n(2 * (i % 17 + 2) - 1), "r": ref(i, "SW")}
        tasks.append(
            write(
                f"single-write-{i:03d}",
                "single-write",
                fill(text, values),
                [fill(call, values)],
                {"url": url, "where": fill(where, values)},
            )
        )
    return tasks


def deep_writes() -> list[dict]:
    so_area = {"SalesOrganization": "1710", "DistributionChannel": "10", "OrganizationDivision": "00"}

    def so_items(*materials: str) -> list[dict]:
        return [{"Material": m, "RequestedQuantity": "5", "RequestedQuantityUnit": "PC"} for m in materials]

    specs = [
        (
            "Customer {c} orders 5 pieces each of materials {m1} and {m2}. Create one standard sales order with both items in the US sales organization (channel 10, division 00); customer reference {r}.",
            [
                post(
                    SO + "A_SalesOrder",
                    {
                        "SalesOrderType": "OR",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}"),
                    },
                )
            ],
            SO + "A_SalesOrder",
            {"PurchaseOrderByCustomer": "{r}", "SalesOrderType": "OR"},
            "to_Item",
            2,
            {"Material": "{m2}"},
        ),
        (
            "Customer {c} needs a rush order for 5 pieces of {m1}, 5 of {m2} and 5 of {m3}, US sales organization (channel 10, division 00); reference {r}.",
            [
                post(
                    SO + "A_SalesOrder",
                    {
                        "SalesOrderType": "RO",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}", "{m3}"),
                    },
                )
            ],
            SO + "A_SalesOrder",
            {"PurchaseOrderByCustomer": "{r}", "SalesOrderType": "RO"},
            "to_Item",
            3,
            {},
        ),
        (
            "Customer {c} orders 5 pieces of {m1} and 5 of {m2}, shipped Cost and Freight: one standard sales order with both items in the German sales organization (channel 10, division 00); reference {r}.",
            [
                post(
                    SO + "A_SalesOrder",
                    {
                        "SalesOrderType": "OR",
                        "SalesOrganization": "1010",
                        "DistributionChannel": "10",
                        "OrganizationDivision": "00",
                        "SoldToParty": "{c}",
                        "IncotermsClassification": "CFR",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}"),
                    },
                )
            ],
            SO + "A_SalesOrder",
            {"PurchaseOrderByCustomer": "{r}", "IncotermsClassification": "CFR"},
            "to_Item",
            2,
            {"Material": "{m1}"},
        ),
        (
            "Order from supplier {c}: 10 pieces of {m1} and 4 pieces of {m2} for the US plant. Create one standard purchase order with both items (company code 1710, purchasing organization 1710, group 001, US dollars).",
            [
                post(
                    PO + "A_PurchaseOrder",
                    {
                        "PurchaseOrderType": "NB",
                        "Supplier": "{c}",
                        "CompanyCode": "1710",
                        "PurchasingOrganization": "1710",
                        "PurchasingGroup": "001",
                        "DocumentCurrency": "USD",
                        "to_PurchaseOrderItem": [
                            {
                                "Material": "{m1}",
                                "Plant": "1710",
                                "OrderQuantity": "10",
                                "PurchaseOrderQuantityUnit": "PC",
                            },
                            {
                                "Material": "{m2}",
                                "Plant": "1710",
                                "OrderQuantity": "4",
                                "PurchaseOrderQuantityUnit": "PC",
                            },
                        ],
                    },
                )
            ],
            PO + "A_PurchaseOrder",
            {"Supplier": "{c}", "PurchaseOrderType": "NB", "DocumentCurrency": "USD"},
            "to_PurchaseOrderItem",
            2,
            {"Material": "{m2}", "Plant": "1710"},
        ),
        (
            "Create a standard purchase order with supplier {c} for the German company code (purchasing organization 1010, group 001, euros); then add an item for 3 pieces of {m1} delivered to the German plant.",
            [
                post(
                    PO + "A_PurchaseOrder",
                    {
                        "PurchaseOrderType": "NB",
                        "Supplier": "{c}",
                        "CompanyCode": "1010",
                        "PurchasingOrganization": "1010",
                        "PurchasingGroup": "001",
                        "DocumentCurrency": "EUR",
                    },
                ),
                post(
                    PO + "A_PurchaseOrderItem",
                    {
                        "PurchaseOrder": "{{0[PurchaseOrder]}}",
                        "Material": "{m1}",
                        "Plant": "1010",
                        "OrderQuantity": "3",
                        "PurchaseOrderQuantityUnit": "PC",
                    },
                ),
            ],
            PO + "A_PurchaseOrder",
            {"Supplier": "{c}", "CompanyCode": "1010", "DocumentCurrency": "EUR"},
            "to_PurchaseOrderItem",
            1,
            {"Material": "{m1}", "Plant": "1010"},
        ),
        (
            "Request the purchase of 2 pieces of {m1} and 6 pieces of {m2} for the US plant: one standard purchase requisition described as '{r}', with both items.",
            [
                post(
                    PR + "A_PurchaseRequisitionHeader",
                    {
                        "PurchaseRequisitionType": "NB",
                        "PurReqnDescription": "{r}",
                        "to_PurchaseReqnItem": [
                            {"Material": "{m1}", "Plant": "1710", "RequestedQuantity": "2", "BaseUnit": "PC"},
                            {"Material": "{m2}", "Plant": "1710", "RequestedQuantity": "6", "BaseUnit": "PC"},
                        ],
                    },
                )
            ],
            PR + "A_PurchaseRequisitionHeader",
            {"PurReqnDescription": "{r}"},
            "to_PurchaseReqnItem",
            2,
            {"Plant": "1710"},
        ),
        (
            "Quote customer {c} for 5 pieces of {m1} and 5 of {m2}: one quotation with both items, US sales organization (channel 10, division 00), reference {r}.",
            [
                post(
                    QT + "A_SalesQuotation",
                    {
                        "SalesQuotationType": "QT",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}"),
                    },
                )
            ],
            QT + "A_SalesQuotation",
            {"PurchaseOrderByCustomer": "{r}", "SalesQuotationType": "QT"},
            "to_Item",
            2,
            {"Material": "{m1}"},
        ),
        (
            "Customer {c} returns 5 pieces of {m1}. Create a returns order with that item in the US sales organization (channel 10, division 00), reference {r}.",
            [
                post(
                    RET + "A_CustomerReturn",
                    {
                        "CustomerReturnType": "RE",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}"),
                    },
                )
            ],
            RET + "A_CustomerReturn",
            {"PurchaseOrderByCustomer": "{r}", "CustomerReturnType": "RE"},
            "to_Item",
            1,
            {"Material": "{m1}"},
        ),
        (
            "Customer {c} gets a credit for 5 pieces of {m1} and 5 of {m2}. Create a credit memo request with both items (German sales organization, channel 10, division 00), reference {r}.",
            [
                post(
                    CMR + "A_CreditMemoRequest",
                    {
                        "CreditMemoRequestType": "CR",
                        "SalesOrganization": "1010",
                        "DistributionChannel": "10",
                        "OrganizationDivision": "00",
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}"),
                    },
                )
            ],
            CMR + "A_CreditMemoRequest",
            {"PurchaseOrderByCustomer": "{r}", "CreditMemoRequestType": "CR"},
            "to_Item",
            2,
            {},
        ),
        (
            "Create the organization '{r} Trading' as a business partner with its address in Hamburg, Germany, in one step.",
            [
                post(
                    BP + "A_BusinessPartner",
                    {
                        "BusinessPartnerCategory": "2",
                        "OrganizationBPName1": "{r} Trading",
                        "to_BusinessPartnerAddress": [{"CityName": "Hamburg", "Country": "DE"}],
                    },
                )
            ],
            BP + "A_BusinessPartner",
            {"OrganizationBPName1": "{r} Trading"},
            "to_BusinessPartnerAddress",
            1,
            {"Country": "DE", "CityName": "Hamburg"},
        ),
        (
            "Create the organization '{r} Imports' as a business partner; then give it an address in Lyon, France.",
            [
                post(BP + "A_BusinessPartner", {"BusinessPartnerCategory": "2", "OrganizationBPName1": "{r} Imports"}),
                post(
                    BP + "A_BusinessPartnerAddress",
                    {"BusinessPartner": "{{0[BusinessPartner]}}", "CityName": "Lyon", "Country": "FR"},
                ),
            ],
            BP + "A_BusinessPartner",
            {"OrganizationBPName1": "{r} Imports"},
            "to_BusinessPartnerAddress",
            1,
            {"Country": "FR"},
        ),
        (
            "Create product {r} (base unit piece) with an English description 'Task gear {r}' in one step.",
            [
                post(
                    PRD + "A_Product",
                    {
                        "Product": "{r}",
                        "BaseUnit": "PC",
                        "to_Description": [{"Product": "{r}", "Language": "EN", "ProductDescription": "Task gear {r}"}],
                    },
                )
            ],
            PRD + "A_Product",
            {"Product": "{r}"},
            "to_Description",
            1,
            {"Language": "EN"},
        ),
        (
            "Create product {r} with base unit kilogram and extend it to the US plant.",
            [
                post(
                    PRD + "A_Product",
                    {"Product": "{r}", "BaseUnit": "KG", "to_Plant": [{"Product": "{r}", "Plant": "1710"}]},
                )
            ],
            PRD + "A_Product",
            {"Product": "{r}", "BaseUnit": "KG"},
            "to_Plant",
            1,
            {"Plant": "1710"},
        ),
        (
            "Open a corrective maintenance order at the US plant described as '{r} replace bearing', with one operation 'Dismantle and replace bearing'.",
            [
                post(
                    MO + "MaintenanceOrder",
                    {
                        "MaintenanceOrderType": "PM01",
                        "MaintenancePlant": "1710",
                        "MaintenanceOrderDesc": "{r} replace bearing",
                        "to_MaintenanceOrderOperation": [{"OperationDescription": "Dismantle and replace bearing"}],
                    },
                )
            ],
            MO + "MaintenanceOrder",
            {"MaintenanceOrderDesc": "{r} replace bearing", "MaintenanceOrderType": "PM01"},
            "to_MaintenanceOrderOperation",
            1,
            {},
        ),
        (
            "Report a malfunction at the German plant ('{r} motor overheats') with one item describing the damage 'winding burnt'.",
            [
                post(
                    MN + "MaintenanceNotification",
                    {
                        "NotificationType": "M2",
                        "MaintenancePlant": "1010",
                        "NotificationText": "{r} motor overheats",
                        "to_Item": [{"MaintenanceNotificationItem": "0001", "MaintNotifItemText": "winding burnt"}],
                    },
                )
            ],
            MN + "MaintenanceNotification",
            {"NotificationText": "{r} motor overheats", "NotificationType": "M2"},
            "to_Item",
            1,
            {},
        ),
        (
            "Customer {c} orders 5 pieces of {m1} and 5 of {m2} (new sales order API): one standard order with both items, US sales organization, channel 10, division 00, reference {r}.",
            [
                post(
                    V4SO + "SalesOrder",
                    {
                        "SalesOrderType": "OR",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "_Item": [
                            {"Product": "{m1}", "RequestedQuantity": 5},
                            {"Product": "{m2}", "RequestedQuantity": 5},
                        ],
                    },
                )
            ],
            V4SO + "SalesOrder",
            {"PurchaseOrderByCustomer": "{r}"},
            "_Item",
            2,
            {"Product": "{m1}"},
        ),
        (
            "Order 8 pieces of {m1} from supplier {c} for the US plant (new purchase order API): standard purchase order with that item, company code 1710, purchasing organization 1710, group 001, US dollars.",
            [
                post(
                    V4PO + "PurchaseOrder",
                    {
                        "PurchaseOrderType": "NB",
                        "Supplier": "{c}",
                        "CompanyCode": "1710",
                        "PurchasingOrganization": "1710",
                        "PurchasingGroup": "001",
                        "DocumentCurrency": "USD",
                        "_PurchaseOrderItem": [
                            {"Material": "{m1}", "Plant": "1710", "OrderQuantity": 8, "PurchaseOrderQuantityUnit": "PC"}
                        ],
                    },
                )
            ],
            V4PO + "PurchaseOrder",
            {"Supplier": "{c}", "PurchaseOrderType": "NB", "DocumentCurrency": "USD"},
            "_PurchaseOrderItem",
            1,
            {"Plant": "1710"},
        ),
        (
            "Post a goods receipt for purchase order {k}: 10 pieces of {m1} into storage location 171A of the US plant, dated today, header text '{r}'.",
            [
                post(
                    MD + "A_MaterialDocumentHeader",
                    {
                        "MaterialDocumentHeaderText": "{r}",
                        "to_MaterialDocumentItem": [
                            {
                                "GoodsMovementType": "101",
                                "PurchaseOrder": "{k}",
                                "Material": "{m1}",
                                "Plant": "1710",
                                "StorageLocation": "171A",
                                "QuantityInEntryUnit": "10",
                                "EntryUnit": "PC",
                            }
                        ],
                    },
                )
            ],
            MD + "A_MaterialDocumentHeader",
            {"MaterialDocumentHeaderText": "{r}"},
            "to_MaterialDocumentItem",
            1,
            {"GoodsMovementType": "101", "PurchaseOrder": "{k}"},
        ),
        (
            "Move 4 pieces of {m1} from storage location 171A to 171B in the US plant (a transfer posting), header text '{r}'.",
            [
                post(
                    MD + "A_MaterialDocumentHeader",
                    {
                        "MaterialDocumentHeaderText": "{r}",
                        "to_MaterialDocumentItem": [
                            {
                                "GoodsMovementType": "311",
                                "Material": "{m1}",
                                "Plant": "1710",
                                "StorageLocation": "171A",
                                "IssuingOrReceivingStorageLoc": "171B",
                                "QuantityInEntryUnit": "4",
                                "EntryUnit": "PC",
                            }
                        ],
                    },
                )
            ],
            MD + "A_MaterialDocumentHeader",
            {"MaterialDocumentHeaderText": "{r}"},
            "to_MaterialDocumentItem",
            1,
            {"GoodsMovementType": "311"},
        ),
        (
            "Create a value contract with customer {c} in the US sales organization (channel 10, division 00), reference {r}, covering material {m1}.",
            [
                post(
                    V4SC + "SalesContract",
                    {
                        "SalesContractType": "WK1",
                        **so_area,
                        "SoldToParty": "{c}",
                        "PurchaseOrderByCustomer": "{r}",
                        "_Item": [{"Product": "{m1}"}],
                    },
                )
            ],
            V4SC + "SalesContract",
            {"PurchaseOrderByCustomer": "{r}", "SalesContractType": "WK1"},
            "_Item",
            1,
            {"Product": "{m1}"},
        ),
        (
            "Quote customer {c} in euros for 5 pieces each of {m1}, {m2} and {m3}: one quotation with three items, German sales organization (channel 10, division 00), reference {r}.",
            [
                post(
                    QT + "A_SalesQuotation",
                    {
                        "SalesQuotationType": "QT",
                        "SalesOrganization": "1010",
                        "DistributionChannel": "10",
                        "OrganizationDivision": "00",
                        "SoldToParty": "{c}",
                        "TransactionCurrency": "EUR",
                        "PurchaseOrderByCustomer": "{r}",
                        "to_Item": so_items("{m1}", "{m2}", "{m3}"),
                    },
                )
            ],
            QT + "A_SalesQuotation",
            {"PurchaseOrderByCustomer": "{r}", "TransactionCurrency": "EUR"},
            "to_Item",
            3,
            {},
        ),
    ]
    tasks = []
    for i, (text, calls, url, where, nav, low, item_where) in enumerate(specs, 1):
        values = {
            "c": n(i % 19 + 1),
            "k": n(i % 17 + 2),
            "r": ref(i, "DW"),
            "m1": n(i % 20 + 1),
            "m2": n((i + 7) % 20 + 1),
            "m3": n((i + 13) % 20 + 1),
        }
        rule: object = {"min": low, "where": fill(item_where, values)} if item_where else {"min": low}
        if item_where and low > 1:
            rule = [{"min": low}, {"min": 1, "where": fill(item_where, values)}]
        state = {"url": url, "where": fill(where, values), "expand": {nav: rule}}
        tasks.append(
            write(f"deep-write-{i:03d}", "deep-write", fill(text, values), [fill(c, values) for c in calls], state)
        )
    return tasks


def fill(value: object, values: dict[str, str]) -> object:
    """``{c}``-style placeholders filled in strings, lists and objects; ``{{...}}`` stays for the run."""
    if isinstance(value, str):
        return value.format(**values)
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    return value


def formatted(value: object, firsts: list[dict]) -> object:
    """``{0[Field]}`` in strings (URLs and bodies) filled from earlier calls' first records."""
    if isinstance(value, str):
        return value.format(*firsts)
    if isinstance(value, dict):
        return {k: formatted(v, firsts) for k, v in value.items()}
    return value


def records(answer: object) -> list[dict]:
    if isinstance(answer, dict):
        inner = answer.get("d", answer)
        if isinstance(inner, dict):
            inner = inner.get("results", inner.get("value", inner))
        if isinstance(inner, dict):
            return [inner]
        return [r for r in inner if isinstance(r, dict)] if isinstance(inner, list) else []
    return []


def run(spec: dict, client: ODataClient) -> dict:
    """The spec's calls, run in order (later URLs filled from earlier answers), as a task record."""
    firsts: list[dict] = []
    calls = []
    for call in spec["reference"]:
        concrete = {k: formatted(v, firsts) for k, v in call.items()}
        exchange = client.send(concrete["method"], concrete["url"], concrete.get("body"))
        found = records(exchange.answer)
        if not 200 <= exchange.status < 300 or (concrete["method"] == "GET" and not found):
            raise SystemExit(
                f"{spec['id']}: {concrete['method']} {concrete['url']} -> {exchange.status} {str(exchange.answer)[:600]}"
            )
        firsts.append(found[0] if found else {})
        calls.append(concrete)
    goal: dict = {}
    if "fields" in spec:
        values = []
        for field in spec["fields"]:
            index, name = field.split(".", 1)
            value = firsts[int(index)].get(name)
            if value in (None, ""):
                raise SystemExit(f"{spec['id']}: call {index} has no value for {name}")
            values.append(str(value))
        goal["answer"] = {"all": distinctive(values, spec["task"], spec["id"])}
    else:
        goal["state"] = spec["state"]
    return {
        "id": spec["id"],
        "kind": spec["kind"],
        "task": spec["task"],
        "goal": goal,
        "reference": calls,
        "writes": "state" in goal,
    }


def distinctive(values: list[str], text: str, tid: str) -> list[str]:
    """The values an answer must name, without those the task's own text (or another expected value)
    already contains: an answer that repeats the question must not meet the goal."""
    kept: list[str] = []
    for i, value in enumerate(values):
        others = " | ".join([text] + values[:i] + values[i + 1 :])
        if value not in kept and not check_answer({"all": [value]}, others).met:
            kept.append(value)
    if not kept:
        raise SystemExit(f"{tid}: every expected value is already in the task's text: {values}")
    return kept


def main(store: Path) -> None:
    specs = lookups() + process_reads() + single_writes() + deep_writes()
    out = []
    with LocalServer(StoreHandle.open(store), allow_reset=True) as server:
        client = ODataClient(server.url)
        problems = []
        for spec in specs:
            reset = client.http.post(server.url + "$reset", headers={"x-csrf-token": server.server.csrf_token})
            if reset.status_code != 204:
                raise SystemExit(
                    f"POST /$reset answered {reset.status_code}: each task must start from the start state"
                )
            try:
                out.append(run(spec, client))
            except SystemExit as exc:
                problems.append(str(exc))
    if problems:
        raise SystemExit("\n".join(problems))
    OUT.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in out), encoding="utf-8")
    print(f"{len(load_tasks(OUT))} tasks written to {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
