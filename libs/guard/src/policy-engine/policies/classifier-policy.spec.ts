import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { PolicyContext, PolicyDecision, PolicyEvaluator } from '../types.js';
import { classifierPolicy, type ClassifierContext, type ClassifierPolicyOptions } from './classifier-policy.js';

function judge(policy: PolicyEvaluator, text: string, context: Partial<PolicyContext> = {}): Promise<PolicyDecision> {
  return Promise.resolve(
    policy.evaluate(text, {
      phase: 'output',
      channel: 'answer',
      offset: 0,
      segmentLength: text.length,
      previousSegmentLength: 0,
      final: true,
      signal: new AbortController().signal,
      ...context,
    }),
  );
}

type Classify = ClassifierPolicyOptions['classify'];
const never: Classify = () => new Promise<boolean>(() => undefined);

afterEach(() => {
  jest.useRealTimers();
});

describe('classifierPolicy', () => {
  describe('verdicts', () => {
    it('allows when the classifier answers true', async () => {
      expect(await judge(classifierPolicy({ classify: () => true }), 'hello')).toEqual({ allowed: true });
    });

    it('denies without detections when the classifier answers false', async () => {
      expect(await judge(classifierPolicy({ classify: () => false }), 'hello')).toEqual({ allowed: false });
    });

    it('waits for an asynchronous verdict', async () => {
      const policy = classifierPolicy({ classify: async (text) => ({ allowed: !text.includes('bad') }) });
      expect(await judge(policy, 'fine')).toEqual({ allowed: true });
      expect(await judge(policy, 'bad')).toEqual({ allowed: false });
    });

    it('passes a declared label on as the detection', async () => {
      const policy = classifierPolicy({ classify: () => ({ allowed: false, label: 'toxicity.high' }), labels: ['toxicity.high'] });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['toxicity.high'] });
    });

    it('declares its labels and its own failure detections', () => {
      const policy = classifierPolicy({ classify: () => true, labels: ['toxicity.high', 'self-harm'] });
      expect(policy.detections).toEqual(['toxicity.high', 'self-harm', 'classifier-error', 'classifier-timeout', 'classifier-no-decision']);
    });

    it('denies naming no label when the classifier gives one it did not declare (it could spell the text)', async () => {
      const policy = classifierPolicy({ classify: (text) => ({ allowed: false, label: `order.${text}` }), labels: ['toxicity.high'] });
      expect(await judge(policy, 'q7z')).toEqual({ allowed: false });
      const undeclared = classifierPolicy({ classify: () => ({ allowed: false, label: 'toxicity.high' }) });
      expect(await judge(undeclared, 'x')).toEqual({ allowed: false });
    });

    it.each([
      ['one with spaces', 'contains user text'],
      ['one longer than 64 characters', 'x'.repeat(65)],
      ['an empty one', ''],
      ['one that is not a string', 42],
    ])('drops a label that is %s but still denies', async (_label, label) => {
      const policy = classifierPolicy({ classify: () => ({ allowed: false, label }) as never });
      expect(await judge(policy, 'x')).toEqual({ allowed: false });
    });

    it('ignores a label on an allowed verdict', async () => {
      const policy = classifierPolicy({ classify: () => ({ allowed: true, label: 'benign' }) });
      expect(await judge(policy, 'x')).toEqual({ allowed: true });
    });

    it('tells the classifier the phase, channel and finality, with a signal of its own', async () => {
      const seen: ClassifierContext[] = [];
      const policy = classifierPolicy({
        classify: (_text, context) => {
          seen.push(context);
          return true;
        },
        channels: ['reasoning'],
      });
      await judge(policy, 'x', { phase: 'output', channel: 'reasoning', final: true });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ phase: 'output', channel: 'reasoning', final: true });
      expect(seen[0]?.signal).toBeInstanceOf(AbortSignal);
      expect(seen[0]?.signal.aborted).toBe(false);
    });

    it('returns frozen decisions', async () => {
      const decision = await judge(classifierPolicy({ classify: () => ({ allowed: false, label: 'x' }), labels: ['x'] }), 'x');
      expect(Object.isFrozen(decision)).toBe(true);
    });
  });

  describe('fails closed', () => {
    it('denies with classifier-error when the classifier throws', async () => {
      const policy = classifierPolicy({
        classify: () => {
          throw new Error('model unavailable');
        },
      });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-error'] });
    });

    it('denies with classifier-error when the classifier rejects', async () => {
      const policy = classifierPolicy({ classify: () => Promise.reject(new Error('503')) });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-error'] });
    });

    it('denies with classifier-error when reading the verdict throws', async () => {
      const verdict = {
        get allowed(): boolean {
          throw new Error('hostile getter');
        },
      };
      const policy = classifierPolicy({ classify: () => verdict });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-error'] });
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a string', 'yes'],
      ['a number', 1],
      ['an empty object', {}],
      ['a non-boolean allowed field', { allowed: 'true' }],
      ['a function', () => true],
    ])('denies with classifier-no-decision when the classifier returns %s', async (_label, value) => {
      const policy = classifierPolicy({ classify: () => value as never });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-no-decision'] });
    });

    it('denies with classifier-no-decision when an asynchronous classifier resolves to nothing', async () => {
      const policy = classifierPolicy({ classify: async () => undefined as never });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-no-decision'] });
    });

    it('denies with classifier-timeout when the verdict is late, and aborts the classifier (fake timers)', async () => {
      jest.useFakeTimers();
      let classifierSignal: AbortSignal | undefined;
      const policy = classifierPolicy({
        timeoutMs: 2000,
        classify: (_text, context) => {
          classifierSignal = context.signal;
          return new Promise<boolean>(() => undefined);
        },
      });
      const pending = judge(policy, 'x');
      await jest.advanceTimersByTimeAsync(1999);
      expect(classifierSignal?.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(await pending).toEqual({ allowed: false, detections: ['classifier-timeout'] });
      expect(classifierSignal?.aborted).toBe(true);
    });

    it('denies with classifier-timeout after a short real timeout', async () => {
      const policy = classifierPolicy({ timeoutMs: 20, classify: never });
      expect(await judge(policy, 'x')).toEqual({ allowed: false, detections: ['classifier-timeout'] });
    });

    it('leaves no timer behind once the verdict arrives', async () => {
      jest.useFakeTimers();
      const policy = classifierPolicy({ classify: async () => true });
      expect(await judge(policy, 'x')).toEqual({ allowed: true });
      expect(jest.getTimerCount()).toBe(0);
    });

    it('ignores a verdict that arrives after the timeout', async () => {
      jest.useFakeTimers();
      let release: (allowed: boolean) => void = () => undefined;
      const policy = classifierPolicy({
        timeoutMs: 50,
        classify: () => new Promise<boolean>((resolve) => (release = resolve)),
      });
      const pending = judge(policy, 'x');
      await jest.advanceTimersByTimeAsync(50);
      release(true);
      expect(await pending).toEqual({ allowed: false, detections: ['classifier-timeout'] });
    });

    it('denies with classifier-timeout when the call is aborted mid-flight', async () => {
      const call = new AbortController();
      const policy = classifierPolicy({ classify: never });
      const pending = judge(policy, 'x', { signal: call.signal });
      call.abort();
      expect(await pending).toEqual({ allowed: false, detections: ['classifier-timeout'] });
    });

    it('denies with classifier-timeout without calling the classifier when the call is already aborted', async () => {
      const classify = jest.fn<Classify>(() => true);
      const call = new AbortController();
      call.abort();
      expect(await judge(classifierPolicy({ classify }), 'x', { signal: call.signal })).toEqual({
        allowed: false,
        detections: ['classifier-timeout'],
      });
      expect(classify).not.toHaveBeenCalled();
    });
  });

  describe('cadence', () => {
    it('by default judges only final text and allows unfinished chunks unseen', async () => {
      const classify = jest.fn<Classify>(() => false);
      const policy = classifierPolicy({ classify });
      expect(await judge(policy, 'partial', { final: false })).toEqual({ allowed: true });
      expect(classify).not.toHaveBeenCalled();
      expect(await judge(policy, 'partial and done', { final: true })).toEqual({ allowed: false });
      expect(classify).toHaveBeenCalledTimes(1);
    });

    it('judges every chunk with every-chunk', async () => {
      const classify = jest.fn<Classify>(() => true);
      const policy = classifierPolicy({ classify, cadence: 'every-chunk' });
      await judge(policy, 'a', { final: false });
      await judge(policy, 'ab', { final: false, previousSegmentLength: 1 });
      expect(classify).toHaveBeenCalledTimes(2);
    });

    it('judges unfinished text each time it crosses a multiple of everyChars', async () => {
      const classify = jest.fn<Classify>(() => false);
      const policy = classifierPolicy({ classify, cadence: { everyChars: 100 } });
      const at = (previousSegmentLength: number, segmentLength: number) =>
        judge(policy, 'x', { final: false, previousSegmentLength, segmentLength });
      expect(await at(0, 99)).toEqual({ allowed: true });
      expect(await at(50, 99)).toEqual({ allowed: true });
      expect(await at(99, 100)).toEqual({ allowed: false });
      expect(await at(100, 199)).toEqual({ allowed: true });
      expect(await at(150, 320)).toEqual({ allowed: false });
      expect(classify).toHaveBeenCalledTimes(2);
    });

    it('always judges final text whatever the cadence', async () => {
      const classify = jest.fn<Classify>(() => true);
      const policy = classifierPolicy({ classify, cadence: { everyChars: 1000 } });
      await judge(policy, 'short', { final: true, previousSegmentLength: 3, segmentLength: 5 });
      expect(classify).toHaveBeenCalledTimes(1);
    });
  });

  describe('shape', () => {
    it('defaults to both phases, the answer channel, the name classifier and no hold-back bound', () => {
      const policy = classifierPolicy({ classify: () => true });
      expect(policy.name).toBe('classifier');
      expect(policy.phases).toEqual(['input', 'output']);
      expect(policy.channels).toEqual(['answer']);
      expect(policy.holdBackChars).toBeUndefined();
      expect(Object.isFrozen(policy)).toBe(true);
      expect(Object.isFrozen(policy.channels)).toBe(true);
    });

    it('buffers a whole channel when asked for an infinite hold-back', () => {
      expect(classifierPolicy({ classify: () => true, holdBackChars: Number.POSITIVE_INFINITY }).holdBackChars).toBe(
        Infinity,
      );
    });
  });

  describe('construction refuses', () => {
    const classify: Classify = () => true;
    const cases: [string, () => unknown][] = [
      ['missing options', () => classifierPolicy(undefined as never)],
      ['a missing classify', () => classifierPolicy({} as never)],
      ['a classify that is not a function', () => classifierPolicy({ classify: 'openai' as never })],
      ['an unknown option field', () => classifierPolicy({ classify, timeout: 100 } as never)],
      ['a zero timeout', () => classifierPolicy({ classify, timeoutMs: 0 })],
      ['a negative timeout', () => classifierPolicy({ classify, timeoutMs: -5 })],
      ['a fractional timeout', () => classifierPolicy({ classify, timeoutMs: 1.5 })],
      ['an infinite timeout', () => classifierPolicy({ classify, timeoutMs: Number.POSITIVE_INFINITY })],
      ['a timeout beyond what timers support', () => classifierPolicy({ classify, timeoutMs: 2 ** 31 })],
      ['an unknown cadence', () => classifierPolicy({ classify, cadence: 'sometimes' as never })],
      ['an everyChars of zero', () => classifierPolicy({ classify, cadence: { everyChars: 0 } })],
      ['a fractional everyChars', () => classifierPolicy({ classify, cadence: { everyChars: 2.5 } })],
      ['a cadence object without everyChars', () => classifierPolicy({ classify, cadence: {} as never })],
      ['a cadence object with an extra field', () =>
        classifierPolicy({ classify, cadence: { everyChars: 10, everyMs: 5 } as never })],
      ['an unknown phase', () => classifierPolicy({ classify, phases: ['input', 'stream' as never] })],
      ['an empty channel list', () => classifierPolicy({ classify, channels: [] })],
      ['a zero hold-back', () => classifierPolicy({ classify, holdBackChars: 0 })],
      ['a bad name', () => classifierPolicy({ classify, name: ' classifier' })],
      ['labels that are not an array', () => classifierPolicy({ classify, labels: 'toxic' as never })],
      ['a label with a space', () => classifierPolicy({ classify, labels: ['too toxic'] })],
    ];
    it.each(cases)('%s with a TypeError', (_label, build) => {
      expect(build).toThrow(TypeError);
    });
  });
});
