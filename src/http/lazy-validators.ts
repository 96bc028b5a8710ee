// Route validators compiled on a route's first request instead of at start-up. Fastify compiles
// one ajv validator per route schema when the app is ready; with about a hundred routes that was a
// third of the service's start-up time, and most deployments never call most routes. The
// validators are Fastify's own (@fastify/ajv-compiler, with the app's ajv options and shared
// schemas): only when they are built changes.
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>;
type Validate = ((data: unknown) => unknown) & { errors?: unknown };

export function lazyValidators(): BuildValidator {
  const build = AjvCompiler();
  return ((externalSchemas: unknown, options: unknown) => {
    let compile: ((route: unknown) => Validate) | undefined;
    return (route: unknown) => {
      let validate: Validate | undefined;
      const lazy: Validate = (data) => {
        compile ??= (build as (e: unknown, o: unknown) => (route: unknown) => Validate)(externalSchemas, options);
        validate ??= compile(route);
        const result = validate(data);
        // Fastify reads a failed validation's errors from the function it was given
        lazy.errors = validate.errors;
        return result;
      };
      return lazy;
    };
  }) as unknown as BuildValidator;
}
