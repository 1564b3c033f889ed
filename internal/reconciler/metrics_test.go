package reconciler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/testpki"
)

// TestReconcileCABundleExpiryMetric: a kept caBundle whose certificate
// expires in five days shows its not_after in the gauge, which meets the
// 7-day alert's condition (internal/monitoring/rules.yaml); a corruption
// counts as a restore of that object; after the source rotates to a CA
// good for a year the gauge follows and the condition no longer holds.
func TestReconcileCABundleExpiryMetric(t *testing.T) {
	name := unique(t)
	apiservice := apiserviceName(name)
	soon := time.Now().Add(5 * 24 * time.Hour).Truncate(time.Second)
	later := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	expiring := testpki.MustCertPEM("expiring", testpki.Options{NotAfter: soon})
	renewed := testpki.MustCertPEM("renewed", testpki.Options{NotAfter: later})
	src := managed(t, name, expiring)
	p := startReconciler(t, "--leader-elect=false")

	notAfter := `kmshealth_cabundle_not_after_timestamp_seconds{controller="cabundle",object="` + apiservice + `"}`
	p.waitMetric(t, notAfter, float64(soon.Unix()))
	// The 7-day alert's expression: min(not_after) - time() < 7 * 86400.
	if left := p.metric(t, notAfter) - float64(time.Now().Unix()); left >= 7*86400 || left <= 0 {
		t.Errorf("not_after - now = %vs; want within 7 days", left)
	}

	corrupt(t, apiservice, renewed)
	waitForBundle(t, apiservice, expiring, restoreLimit)
	p.waitMetric(t, `kmshealth_object_corrections_total{controller="cabundle",object="`+apiservice+`"}`, 1)

	cms := env.Clientset().CoreV1().ConfigMaps("default")
	cm, err := cms.Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["ca.crt"] = string(renewed)
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, notAfter, float64(later.Unix()))
	if left := p.metric(t, notAfter) - float64(time.Now().Unix()); left < 30*86400 {
		t.Errorf("not_after - now = %vs after the rotation; want more than 30 days", left)
	}
}
