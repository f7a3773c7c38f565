// The benches' seeded random source is the one every test shares.
export { type Random, seeded } from '@gatehouse/contracts/testing';
