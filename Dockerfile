# syntax=docker/dockerfile:1
# Baseplate in a container: `docker build -t baseplate .` (README, "Container").
# Two stages: the build stage has the native toolchain (python3, make, g++ and cc for
# better-sqlite3, isolated-vm, the embedded engine's statement-deadline extension and the
# memory-trim module) and builds dist/; the runtime stage holds the production dependencies, dist/
# and the two native libraries, and runs as the unprivileged user `node`.

FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
# what npm ci installs from the context: the console's workspace (its vite builds dist/console/,
# the owner console) and the API-types tool, a file: dependency
COPY console ./console
COPY tools ./tools
# npm ci's postinstall step (scripts/build.mjs) builds dist/ (with dist/console/),
# build/sqlite-deadline.so and build/memory-trim.node from these
COPY scripts ./scripts
COPY src ./src
COPY native ./native
COPY bin ./bin
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
# the code belongs to root and is read-only to the service's user
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# a native library is rebuilt when older than its source, and this stage has no compiler: the
# sources come first and the libraries are touched after them
COPY --from=build /app/native ./native
COPY --from=build /app/build/sqlite-deadline.so ./build/sqlite-deadline.so
COPY --from=build /app/build/memory-trim.node ./build/memory-trim.node
RUN touch build/sqlite-deadline.so build/memory-trim.node \
 && ln -s /app/bin/baseplate.mjs /usr/local/bin/baseplate \
 && mkdir -p /data && chown node:node /data
USER node
# the embedded engine's files (platform.db, projects/, master.key); unused with DATABASE_URL
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/main.js"]
