# An APIService whose caBundle kmshealth already manages (it carries the
# kmshealth.io/ca-bundle-source annotation) is imported by its name; the
# source or inline bundle is read back from the cluster.
terraform import kmshealth_apiservice_cabundle.metrics v1beta1.metrics.k8s.io
