import { describe, expect, it } from '@jest/globals';
import { describeType, readOptions } from './options.js';

describe('readOptions', () => {
  it('treats missing options as an empty bag', () => {
    expect(readOptions('p', undefined, ['a'])).toEqual({});
  });

  it('copies known options, reading each getter once', () => {
    let reads = 0;
    const options = {
      get a() {
        reads++;
        return reads;
      },
    };
    const bag = readOptions('p', options, ['a']);
    expect([bag.a, bag.a, reads]).toEqual([1, 1, 1]);
  });

  it('names a misspelled option and lists the known ones', () => {
    expect(() => readOptions('p', { nmae: 'x' }, ['name', 'phases'])).toThrow(
      'p: unknown option "nmae" (known options: name, phases)',
    );
  });

  it('does not echo an unknown key that does not look like an option name', () => {
    const key = 'sk-live-0123456789abcdef';
    expect(() => readOptions('p', { [key]: 1 }, ['name'])).toThrow('(name not shown)');
    expect(() => readOptions('p', { [key]: 1 }, ['name'])).not.toThrow(key);
  });

  it.each([null, 'x', 1, [], true])('refuses options that are %p', (value) => {
    expect(() => readOptions('p', value, [])).toThrow(TypeError);
  });
});

describe('describeType', () => {
  it('describes a value by its type only', () => {
    expect([describeType('secret'), describeType(null), describeType([]), describeType(/s/), describeType(1)]).toEqual([
      'string',
      'null',
      'an array',
      'a RegExp',
      'number',
    ]);
  });
});
