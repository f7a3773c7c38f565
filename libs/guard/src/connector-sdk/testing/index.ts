export * from './conformance.js';
export { callThrough, CONNECTOR_ENTRY_POINTS, type ConnectorEntryPoint, type EntryPointOutcome } from './entry-points.js';
