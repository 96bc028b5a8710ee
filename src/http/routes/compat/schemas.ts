// Bodies supabase-js (auth-js) sends to the GoTrue routes. Every field it may send is listed, so a
// typo is still 422 unknown_field; fields Baseplate has no use for are accepted and refused by the
// routes with a sentence naming the feature (phone, metadata, PKCE), or ignored (captcha).
import { Type, type Static } from '@sinclair/typebox';

const strict = { additionalProperties: false } as const;
const Str = (max = 1024) => Type.String({ maxLength: max });
const Nullable = (t: ReturnType<typeof Str>) => Type.Optional(Type.Union([t, Type.Null()]));
const Meta = Type.Optional(Type.Object({ captcha_token: Type.Optional(Type.Union([Str(4096), Type.Null()])) }, strict));
const Pkce = { code_challenge: Nullable(Str(256)), code_challenge_method: Nullable(Str(16)) };
const Data = Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50, description: 'User metadata: only {} is accepted' }));

export const SignUp = Type.Object(
  { email: Type.Optional(Str(320)), password: Str(), data: Data, gotrue_meta_security: Meta, ...Pkce, phone: Type.Optional(Str(64)), channel: Type.Optional(Str(16)) },
  strict,
);
export type SignUp = Static<typeof SignUp>;

export const PasswordGrant = Type.Object({ email: Type.Optional(Str(320)), password: Str(), phone: Type.Optional(Str(64)), gotrue_meta_security: Meta }, strict);
export type PasswordGrant = Static<typeof PasswordGrant>;

export const Otp = Type.Object(
  { email: Type.Optional(Str(320)), data: Data, create_user: Type.Optional(Type.Boolean()), gotrue_meta_security: Meta, ...Pkce, phone: Type.Optional(Str(64)), channel: Type.Optional(Str(16)) },
  strict,
);
export type Otp = Static<typeof Otp>;

export const Verify = Type.Object(
  {
    type: Str(32),
    token_hash: Type.Optional(Str(128)),
    token: Type.Optional(Str(128)),
    email: Type.Optional(Str(320)),
    phone: Type.Optional(Str(64)),
    gotrue_meta_security: Meta,
    options: Type.Optional(Type.Object({ redirectTo: Type.Optional(Str(2048)), captchaToken: Type.Optional(Str(4096)) }, strict)),
  },
  strict,
);
export type Verify = Static<typeof Verify>;

export const Recover = Type.Object({ email: Str(320), gotrue_meta_security: Meta, ...Pkce }, strict);
export type Recover = Static<typeof Recover>;

export const Resend = Type.Object({ email: Type.Optional(Str(320)), type: Str(32), gotrue_meta_security: Meta, ...Pkce, phone: Type.Optional(Str(64)) }, strict);
export type Resend = Static<typeof Resend>;

export const UserUpdate = Type.Object(
  {
    email: Type.Optional(Str(320)),
    password: Type.Optional(Str()),
    current_password: Type.Optional(Str()),
    nonce: Type.Optional(Str(64)),
    phone: Type.Optional(Str(64)),
    data: Data,
    ...Pkce,
  },
  strict,
);
export type UserUpdate = Static<typeof UserUpdate>;

export const RedirectQuery = Type.Object({ redirect_to: Type.Optional(Str(2048)) }, strict);
export type RedirectQuery = Static<typeof RedirectQuery>;
