// The linter keeps the shape the README's architecture section draws: the ground floor (src/) imports no
// layer above it, phases import no mode or CLI, the CLI no phase, nothing in phases/ or src/ prints (progress is a view).
// test/unit/import-boundaries.test.ts checks the same layering file by file, with cycles and phase units.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const above = (...layers) => ({
  patterns: layers.map((layer) => ({ group: [`**/${layer}/**`, `../${layer}/*`], message: `this layer imports nothing from ${layer}/` })),
});

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.state/**', 'lab/.work/**', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
        fetch: 'readonly',
        setImmediate: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Log lines are matched as upstream prints them, spaces and escapes included.
      'no-regex-spaces': 'off',
      'no-control-regex': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', above('phases', 'modes', 'cli', 'lab', 'test', 'scripts', 'bin')], 'no-console': 'error' },
  },
  { files: ['phases/**/*.ts'], rules: { 'no-restricted-imports': ['error', above('modes', 'cli', 'lab', 'test')], 'no-console': 'error' } },
  { files: ['modes/**/*.ts'], rules: { 'no-restricted-imports': ['error', above('cli', 'lab', 'test')], 'no-console': 'error' } },
  // The CLI calls a mode, which names the phases.
  { files: ['cli/**/*.ts'], rules: { 'no-restricted-imports': ['error', above('phases', 'lab', 'test')] } },
);
