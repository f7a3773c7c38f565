#!/usr/bin/env node
// Rebuilds the approval projection by replaying gatehouse.approvals.v1 from offset 0 into a
// separate schema and, with --compare, says whether it equals the live projection.
//   node services/approval/dist/cli/replay.js [--compare] [--schema approval_replay]
// (also `gatehouse approvals replay`). Exit status: 0 rebuilt (and equal), 1 not equal, 2 failed.
import { keyringFromEnv } from '@gatehouse/contracts';
import { approvalProjection, approvalRetainMsFromEnv } from '@gatehouse/approval-projection';
import { replayCliMain, SERVICES } from '@gatehouse/service-runtime';

// The keyring decides which decisions count, and the retention what the fold forgets, exactly as in
// the live service (GATEHOUSE_TRUSTED_KEYS_FILE, GATEHOUSE_APPROVAL_RETAIN_MS).
await replayCliMain(SERVICES['approval'], approvalProjection(keyringFromEnv(), { retainMs: approvalRetainMsFromEnv() }));
