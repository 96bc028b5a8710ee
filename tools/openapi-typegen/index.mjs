// openapi-typescript, resolved from this folder so that it loads the TypeScript 5 beside it.
export { default, astToString } from 'openapi-typescript';
