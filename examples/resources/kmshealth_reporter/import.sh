# A reporter is imported by <namespace>/<name>; everything else (image,
# sockets, timing, target, scheduling, security context, resources) is read
# back from the DaemonSet, and install_crd from the labels of the KMSHealth
# CRD.
terraform import kmshealth_reporter.this kube-system/kmshealth-reporter
