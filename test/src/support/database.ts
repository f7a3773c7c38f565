import { createTestDatabase } from '@gatehouse/service-runtime/testing';

/** A throwaway database for one spec file; returns its URL and a drop function. */
export async function throwawayDatabase(prefix = 'gh_e2e'): Promise<{ url: string; drop: () => Promise<void> }> {
  return createTestDatabase(prefix);
}
