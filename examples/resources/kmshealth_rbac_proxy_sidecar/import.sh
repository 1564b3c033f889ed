# A protected workload is imported by <kind>/<namespace>/<name> of the
# workload; the configuration is read back from the record kmshealth keeps
# in the ConfigMap kmshealth-rbac-proxy-<kind>-<name>.
terraform import kmshealth_rbac_proxy_sidecar.web Deployment/shop/web
