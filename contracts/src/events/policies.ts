import { z } from 'zod';
import { defineEvent } from '../envelope.js';
import { JsonValueSchema } from './common.js';

/** A validated policy bundle version. The policies topic is compacted by policy set id. */
export const PolicyBundlePublishedV1 = defineEvent(
  'PolicyBundlePublished',
  1,
  z.object({
    policySetId: z.string().min(1),
    revision: z.number().int().min(1),
    /** Hex sha-256 of the canonical bundle document. */
    digest: z.string().regex(/^[\da-f]{64}$/),
    publishedBy: z.string().min(1),
    bundle: z.record(z.string(), JsonValueSchema),
  }),
);
export type PolicyBundlePublished = z.infer<typeof PolicyBundlePublishedV1>;
