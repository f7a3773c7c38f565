import { type JsonValue } from '@gatehouse/contracts';
import { type PublishedBundle } from '@gatehouse/policies';

/** A published version as the API shows it. */
export interface VersionView {
  readonly policySetId: string;
  readonly revision: number;
  readonly digest: string;
  readonly publishedBy: string;
  readonly publishedAt: string;
  readonly keyId: string;
  readonly bundle?: Readonly<Record<string, JsonValue>>;
}

export function viewOf(version: PublishedBundle, withBundle = true): VersionView {
  return {
    policySetId: version.policySetId,
    revision: version.revision,
    digest: version.digest,
    publishedBy: version.publishedBy,
    publishedAt: new Date(version.publishedAt).toISOString(),
    keyId: version.keyId,
    ...(withBundle && { bundle: version.bundle }),
  };
}
