#!/usr/bin/env node
// Rebuilds the ledger projection by replaying gatehouse.ledger.v1 from offset 0 into a separate
// schema and, with --compare, says whether it equals the live projection.
//   node services/idempotency-ledger/dist/cli/replay.js [--compare] [--schema ledger_replay]
// Reads the service's environment (GATEHOUSE_DATABASE_URL, GATEHOUSE_TOPIC_NAMESPACE, ...).
// Exit status: 0 rebuilt (and equal), 1 not equal, 2 failed.
import { keyringFromEnv } from '@gatehouse/contracts';
import { replayCliMain, SERVICES } from '@gatehouse/service-runtime';
import { ledgerProjection } from '@gatehouse/ledger-projection';

// The keyring decides which events count, exactly as in the live service (GATEHOUSE_TRUSTED_KEYS_FILE).
await replayCliMain(SERVICES['idempotency-ledger'], ledgerProjection(keyringFromEnv()));
