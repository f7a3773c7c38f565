#!/usr/bin/env node
// Rebuilds the policy projection by replaying gatehouse.policies.v1 from offset 0 into a separate
// schema and, with --compare, says whether it equals the live projection and whether the fold
// snapshot the service stored is the fold of the log up to its offsets.
//   node services/policy/dist/cli/replay.js [--compare] [--schema policy_replay]
// Reads the service's environment (GATEHOUSE_DATABASE_URL, GATEHOUSE_TOPIC_NAMESPACE, ...).
// Exit status: 0 rebuilt (and equal), 1 not equal, 2 failed.
import { keyringFromEnv } from '@gatehouse/contracts';
import { replayCliMain, SERVICES } from '@gatehouse/service-runtime';
import { policyProjection } from '@gatehouse/policy-projection';

// The keyring decides which publications count, exactly as in the live service (GATEHOUSE_TRUSTED_KEYS_FILE).
await replayCliMain(SERVICES['policy'], policyProjection(keyringFromEnv()));
