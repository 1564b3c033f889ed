package reencrypt

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kmshealth/terraform-provider-kmshealth/internal/kube"
)

// recordStore writes one run's record ConfigMap, each write preconditioned
// on the resourceVersion of the last, so two runs of the same name (two
// applies at once) cannot both think they own it.
type recordStore struct {
	core      kubernetes.Interface
	namespace string
	name      string
	cm        *corev1.ConfigMap // last written or read; nil before
}

func (s *recordStore) load(ctx context.Context) (*Record, error) {
	cm, err := s.core.CoreV1().ConfigMaps(s.namespace).Get(ctx, RecordName(s.name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read re-encryption record %s/%s: %w", s.namespace, RecordName(s.name), err)
	}
	if cm.Labels[kube.ManagedByLabel] != kube.ManagedByValue {
		return nil, fmt.Errorf("ConfigMap %s/%s exists and is not kmshealth's (label %s=%s missing): choose another name or namespace",
			s.namespace, cm.Name, kube.ManagedByLabel, kube.ManagedByValue)
	}
	s.cm = cm
	r, err := DecodeRecord(cm.Data[RecordKey])
	if err != nil {
		return nil, fmt.Errorf("record %s/%s: %w", s.namespace, cm.Name, err)
	}
	return r, nil
}

func (s *recordStore) save(ctx context.Context, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode re-encryption record: %w", err)
	}
	cms := s.core.CoreV1().ConfigMaps(s.namespace)
	if s.cm == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: RecordName(s.name), Namespace: s.namespace,
				Labels: map[string]string{kube.ManagedByLabel: kube.ManagedByValue},
			},
			Data: map[string]string{RecordKey: string(b)},
		}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if err != nil {
			return fmt.Errorf("create re-encryption record %s/%s: %w", s.namespace, cm.Name, err)
		}
		s.cm = created
		return nil
	}
	cm := s.cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[RecordKey] = string(b)
	updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager})
	if apierrors.IsConflict(err) {
		// A rewrite of configmaps (this run's or another's) may have
		// written the record back unchanged: that moves its
		// resourceVersion, not its content. Retry once on top of it.
		live, gerr := cms.Get(ctx, cm.Name, metav1.GetOptions{})
		if gerr == nil && live.UID == s.cm.UID && live.Data[RecordKey] == s.cm.Data[RecordKey] {
			cm.ResourceVersion = live.ResourceVersion
			updated, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		}
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("re-encryption record %s/%s was changed by someone else during the run (another apply of the same "+
			"re-encryption?); apply again to resume from what it says: %w", s.namespace, cm.Name, err)
	}
	if err != nil {
		return fmt.Errorf("update re-encryption record %s/%s: %w", s.namespace, cm.Name, err)
	}
	s.cm = updated
	return nil
}

// DeleteRecord removes the run's record ConfigMap, and nothing else: the
// delete is preconditioned on the UID read, so a ConfigMap re-created
// under that name meanwhile is left alone, and one that is not ours (no
// managed-by label) is never deleted. A record already gone is no error.
func DeleteRecord(ctx context.Context, core kubernetes.Interface, namespace, name string) error {
	cms := core.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read re-encryption record %s/%s: %w", namespace, RecordName(name), err)
	}
	if cm.Labels[kube.ManagedByLabel] != kube.ManagedByValue {
		return nil
	}
	err = cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if err != nil && !kube.Replaced(err) {
		return fmt.Errorf("delete re-encryption record %s/%s: %w", namespace, cm.Name, err)
	}
	return nil
}
