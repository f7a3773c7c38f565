// Shared with every service: one throwaway database per spec file.
export { createTestDatabase, type TestDatabase } from '@gatehouse/service-runtime/testing';
