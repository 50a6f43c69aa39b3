# syntax=docker/dockerfile:1
# crm-sync container: Node 24 LTS slim, production dependencies only, non-root, health-checked.
# Node 24 runs the TypeScript sources directly (type stripping): there is no build step.
#
#   docker build -t crm-sync .
#   docker run --init --stop-timeout 40 -p 3000:3000 --env-file .env crm-sync
#   docker run --rm --env-file .env crm-sync status      # any other command of the crm-sync CLI
#
# compose.yaml runs it beside a PostgreSQL. test/container/container.test.ts performs these steps outside Docker.

FROM node:24-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# The lock decides every version; devDependencies (test tools, type checker, the Node 24 binary that
# `npm install` brings to machines with an older node) stay out of the image. The npm cache lives in
# a BuildKit cache mount: it speeds up rebuilds and never lands in a layer.
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund
# TypeScript stays too: an optional peer of @react-router/node (under pg-boss's dashboard) that is also
# one of our devDependencies, which npm keeps (devOptional). Nothing at run time loads it: 30 MB less.
RUN rm -rf node_modules/typescript node_modules/@typescript node_modules/.bin/tsc node_modules/.bin/tsserver

FROM node:24-slim
ENV NODE_ENV=production DATA_DIR=/app/.data PORT=3000
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY migrations ./migrations
# Only the embedded PostgreSQL (used when DATABASE_URL is not set) writes below /app. `crm-sync` is
# on the PATH for `docker exec <container> crm-sync status` and the like.
RUN mkdir -p /app/.data && chown node:node /app/.data && ln -s /app/bin/crm-sync.js /usr/local/bin/crm-sync
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM: crm-sync stops taking deliveries, lets active jobs finish (20 s at most; the rest stay
# queued), closes the pool, and exits within 30 s. Give the container more than that before SIGKILL
# (`docker run --stop-timeout 40`, compose's `stop_grace_period: 40s`; Docker's default is 10 s).
STOPSIGNAL SIGTERM
# The launcher runs the CLI with the V8 flags of bin/node-flags.js (a young generation of 2 x 16 MB,
# an old-space limit of 1.5 GB: a sweep then peaks near 210 MB instead of 350-400 MB). It replaces itself
# with `node <flags> src/cli/main.ts` (same pid); NODE_OPTIONS may set other values.
ENTRYPOINT ["node", "bin/crm-sync.js"]
CMD ["start"]
