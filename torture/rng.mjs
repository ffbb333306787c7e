/** A small seeded RNG (mulberry32) for the torture plans: the same seed gives the same plan. */

/** A generator seeded with `seed` (an integer). */
export function rng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    /** A float in [0, 1). */
    next,
    /** An integer in [lo, hi]. */
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    /** True with probability p. */
    chance: (p) => next() < p,
    /** One of `items`, uniformly. */
    pickUniform: (items) => items[Math.floor(next() * items.length)],
    /** One of the `[value, weight]` pairs, by weight. */
    pick: (weighted) => {
      const total = weighted.reduce((s, [, w]) => s + w, 0);
      let x = next() * total;
      for (const [v, w] of weighted) {
        if ((x -= w) < 0) return v;
      }
      return weighted[weighted.length - 1][0];
    },
  };
}
