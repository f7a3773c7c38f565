export { CreatePolicyProjection1764748800000, POLICIES_SNAPSHOT_VERSION, POLICY_MIGRATIONS, policyProjection } from './policy-projection.js';
