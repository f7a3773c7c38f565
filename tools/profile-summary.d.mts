/** A V8 CPU profile as `node --cpu-prof` writes it (the fields the summary reads). */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
    readonly children?: readonly number[];
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  readonly totalMs: number;
  /** Keyed by `<function>\u0000<file:line>`. */
  readonly self: ReadonlyMap<string, number>;
  readonly inclusive: ReadonlyMap<string, number>;
  readonly owners: ReadonlyMap<string, number>;
}

export function ownerOf(url: string, functionName: string): string;
export function summarise(profiles: readonly CpuProfile[]): ProfileSummary;
export function renderSummary(summary: ProfileSummary, options?: { top?: number; title?: string }): string;
