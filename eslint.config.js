// Lint: typescript-eslint's type-checked rules on the library, the plain
// recommended set on tests, scripts and benchmarks (cheaper, and tests cast freely).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/**', 'dist.*/**', 'node_modules/**', 'coverage/**', 'scratch/**', '.scratch/**', 'bench/peers/**', 'docs/machines/**', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    // one program per tsconfig is cheaper than the project service's per-file programs (about a third of lint's time)
    languageOptions: { parserOptions: { project: ['./tsconfig.json', './src/viewer/page/tsconfig.json'], tsconfigRootDir: import.meta.dirname } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-expressions': ['error', { allowTernary: true, allowShortCircuit: true }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  // tests build failing streams from generators that only throw
  { files: ['test/**/*.ts'], rules: { 'require-yield': 'off' } },
)
