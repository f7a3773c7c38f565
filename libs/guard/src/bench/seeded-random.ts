/** A seeded source of numbers in [0, 1): the same sequence for the same seed on every run. */
export type Random = () => number;

/** mulberry32: tiny, seedable and good enough to make a bench corpus identical on every run. */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
