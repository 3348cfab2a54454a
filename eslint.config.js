// Type-aware linting: no-floating-promises is the rule that matters most here,
// because a dropped promise in a worker loop is a lost job.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // test/package/consumer: a user's program, type-checked against the installed tarball by
  // test/package/packed.test.ts; here 'delayq' would resolve to whatever dist/ holds.
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'bench/results/', 'test/package/consumer/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', '*.mjs', 'scripts/*.mjs'] } },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // Handlers are async by contract even when they do not await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
