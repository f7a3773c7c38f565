import { createJestConfig } from '../jest.preset.mjs';

const base = createJestConfig(import.meta.dirname);

// System tests: cross-service specs in src/, and the suites of the whole product (issue 9):
// e2e/ (the demo's scenario as assertions), fault/ (broker and service failures), fuzz/
// (malformed input at every REST endpoint and Kafka consumer), load/ (bounded load test),
// security/ (each attack of issue 15 as an attacker would run it), scale/ (the replicated
// three-node cluster of infra/kafka/cluster.sh, issue 19).
export default {
  ...base,
  testMatch: ['<rootDir>/{src,e2e,fault,fuzz,load,security,scale}/**/*.spec.ts'],
};
