import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.nx/**', '.gatehouse/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          // Shared test and benchmark tooling at the workspace root (not a project of its own).
          allow: ['tools/readme-examples\.mjs$', 'tools/bench-results\.mjs$', 'tools/bench-report\.mjs$', 'tools/bench-limits\.mjs$', 'tools/profile-summary\.mjs$', 'tools/jest-summary-reporter\.mjs$'],
          depConstraints: [
            { sourceTag: 'scope:contracts', onlyDependOnLibsWithTags: [] },
            // Domain code (the folds, the policies, the JSON Schema engine): pure, on contracts alone.
            // Infrastructure (Kafka, the service runtime, projections, the agent guard) may use it.
            { sourceTag: 'kind:domain', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:lib', onlyDependOnLibsWithTags: ['scope:contracts', 'scope:lib'] },
            { sourceTag: 'scope:service-lib', onlyDependOnLibsWithTags: ['scope:contracts', 'scope:lib', 'scope:service-lib'] },
            {
              sourceTag: 'scope:service',
              onlyDependOnLibsWithTags: ['scope:contracts', 'scope:lib', 'scope:service-lib'],
            },
            {
              sourceTag: 'scope:system-test',
              onlyDependOnLibsWithTags: ['scope:contracts', 'scope:lib', 'scope:service-lib'],
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {
      globals: Object.fromEntries(
        ['console', 'process', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'setImmediate', 'Buffer', 'URL', 'AbortSignal', 'fetch'].map((g) => [g, 'readonly']),
      ),
    },
  },
);
