// Package deploy holds kmigrate's Kubernetes manifests (kustomize: kmirror, kverify, kreconcile,
// the Prometheus scrape configuration) and Grafana dashboards (grafana/). It has no Go code;
// its tests check what the manifests and dashboards depend on:
//
//   - TestDashboards builds kmirror and kverify, runs them on in-process kfake clusters
//     (kmirror with a stopped partition, so that every metric it has has samples; kverify
//     diff --follow), scrapes their /metrics and checks that every metric a dashboard queries,
//     in a panel's PromQL (parsed with the Prometheus parser) or a template variable's
//     label_values, is exported by the binary the dashboard is for. A histogram counts as its
//     _bucket, _sum and _count series.
//   - TestManifestFlags checks that every flag and subcommand the manifests pass to the
//     binaries exists (their --help lists it); TestExampleConfig that the example
//     mm2.properties lints clean; TestScrapeAnnotations that the scraped pods' annotations,
//     container ports, --metrics-addr and probes agree, and that the scrape job uses them.
//
// Rendering and schema validation are scripts/validate-deploy.sh (make validate-deploy).
package deploy
