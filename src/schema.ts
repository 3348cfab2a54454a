/**
 * Payload validation through any Standard Schema validator (zod, valibot, arktype, ...). The
 * interface below is the Standard Schema v1 spec's own, copied as the spec invites, so delayq
 * needs no validator as a dependency.
 */
import { ValidationError } from './errors.js';

/** The Standard Schema v1 interface (https://standardschema.dev). */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaV1.Result<Output> | Promise<StandardSchemaV1.Result<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

// eslint-disable-next-line @typescript-eslint/no-namespace -- the spec's own shape
export declare namespace StandardSchemaV1 {
  /** A validation result. */
  export type Result<Output> =
    { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<Issue> };
  /** One problem found. */
  export interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }
}

/** Throws ValidationError unless `schema` looks like a Standard Schema. */
export function assertSchema(schema: unknown, name: string): asserts schema is StandardSchemaV1 {
  const std = (schema as { '~standard'?: { validate?: unknown } } | null)?.['~standard'];
  if (typeof std?.validate !== 'function') {
    throw new ValidationError(
      `${name} must be a Standard Schema validator (zod >= 3.24, valibot >= 1, arktype, ...): an object with ['~standard'].validate`,
      name,
    );
  }
}

/**
 * Validate `value`; resolves to the schema's output, or throws a ValidationError listing every
 * issue with its path.
 */
export async function validatePayload<Output>(
  schema: StandardSchemaV1<unknown, Output>,
  value: unknown,
): Promise<Output> {
  const result = await schema['~standard'].validate(value);
  if (result.issues === undefined) return result.value;
  const issues = result.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
  const listed = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  throw new ValidationError(
    `payload failed validation (${issues.length} issue${issues.length === 1 ? '' : 's'}): ${listed}`,
    issues,
  );
}

function formatPath(path: StandardSchemaV1.Issue['path']): string {
  if (!path || path.length === 0) return 'payload';
  let out = 'payload';
  for (const segment of path) {
    const key = typeof segment === 'object' ? segment.key : segment;
    out += typeof key === 'number' ? `[${key}]` : `.${String(key)}`;
  }
  return out;
}
