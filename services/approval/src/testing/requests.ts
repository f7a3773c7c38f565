export { REFUND_SCHEMA, testRequest, type TestRequestOptions } from '@gatehouse/approvals/testing';
