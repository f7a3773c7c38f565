export { type AddressClass, classifyAddress, isPublicAddress } from './address-policy.js';
export {
  type EgressDenialCode,
  EgressDeniedError,
  type EgressFetchOptions,
  type EgressGuardedFetch,
  type EgressHop,
  type EgressLookup,
  type EgressRequestInit,
  type EgressResolvedAddress,
  type EgressTransport,
  egressFetch,
} from './egress-fetch.js';
export { declaredEgressWithin, egressDomainAllowed, hostMatches, validateEgressPatterns } from './hosts.js';
