{{/* Names and labels shared by every template. */}}
{{- define "shmguard.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "shmguard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "shmguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "shmguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "shmguard.labels" -}}
{{ include "shmguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "shmguard.tlsSecret" -}}
{{- default (printf "%s-tls" (include "shmguard.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{/* The parts every webhook entry shares: service, rules, selectors. $path is /mutate or /validate. */}}
{{- define "shmguard.webhookCommon" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
admissionReviewVersions: [v1]
sideEffects: None
timeoutSeconds: {{ $root.Values.webhook.timeoutSeconds }}
matchPolicy: Equivalent
clientConfig:
  service:
    name: {{ include "shmguard.fullname" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ $path }}
    port: 443
  {{- if not $root.Values.certManager.enabled }}
  caBundle: {{ required "tls.caBundle is required when certManager.enabled is false" $root.Values.tls.caBundle }}
  {{- end }}
rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
    scope: Namespaced
  - apiGroups: [jobset.x-k8s.io]
    apiVersions: [v1alpha2]
    operations: [CREATE]
    resources: [jobsets]
    scope: Namespaced
  - apiGroups: [kubeflow.org]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pytorchjobs, tfjobs, xgboostjobs, paddlejobs, mxjobs, jaxjobs, mpijobs]
    scope: Namespaced
  - apiGroups: [kubeflow.org]
    apiVersions: [v2beta1]
    operations: [CREATE]
    resources: [mpijobs]
    scope: Namespaced
  - apiGroups: [trainer.kubeflow.org]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [trainingruntimes]
    scope: Namespaced
  - apiGroups: [trainer.kubeflow.org]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [clustertrainingruntimes]
    scope: Cluster
  - apiGroups: [leaderworkerset.x-k8s.io]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [leaderworkersets]
    scope: Namespaced
  - apiGroups: [batch.volcano.sh]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [jobs]
    scope: Namespaced
  - apiGroups: [argoproj.io]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [workflows, workflowtemplates, cronworkflows]
    scope: Namespaced
  - apiGroups: [argoproj.io]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [clusterworkflowtemplates]
    scope: Cluster
  {{- if eq $path "/validate" }}
  - apiGroups: [ray.io]
    apiVersions: [v1, v1alpha1]
    operations: [CREATE]
    resources: [rayclusters, rayjobs, rayservices]
    scope: Namespaced
  - apiGroups: [trainer.kubeflow.org]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [trainjobs]
    scope: Namespaced
  {{- end }}
objectSelector:
  matchExpressions:
    - key: app.kubernetes.io/name
      operator: NotIn
      values: [{{ include "shmguard.name" $root }}]
{{- end -}}

{{- define "shmguard.excludedNamespaces" -}}
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: {{ append .Values.webhook.excludedNamespaces .Release.Namespace | toJson }}
{{- end -}}

{{- define "shmguard.caAnnotation" -}}
{{- if .Values.certManager.enabled }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "shmguard.fullname" . }}-serving-cert
{{- end }}
{{- end -}}
