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

{{/* The node agent's: another name, so that no selector of the webhook's (Deployment, Service,
PodDisruptionBudget, the webhooks' objectSelector) matches its pods. */}}
{{- define "shmguard.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "shmguard.name" . }}-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "shmguard.agentLabels" -}}
{{ include "shmguard.agentSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The webhook's image. Chart 0.1.0 ran the webhook and the agent from one image, `shmguard`,
with a subcommand each; an image.repository that still names it would start the webhook's
Deployment from an image that has no shmguard-webhook, so it is refused here, saying what to set
(`helm upgrade --reuse-values` keeps chart 0.1.0's defaults, that one among them). */}}
{{- define "shmguard.webhookImage" -}}
{{- if regexMatch "(^|/)shmguard$" .Values.image.repository -}}
{{- fail (printf "image.repository is %q, the one image of shmguard chart 0.1.0: the webhook and the node agent now have an image each. Set image.repository to the webhook's (shmguard-webhook) and agent.image.repository to the agent's (shmguard-agent), or upgrade with --reset-then-reuse-values instead of --reuse-values (docs/operating.md, \"Upgrading\")" .Values.image.repository) -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The agent's image: agent.image, its tag image.tag's when empty. Read with dig, so that values
carried over from chart 0.1.0 (--reuse-values), which have no agent.image, get the default. */}}
{{- define "shmguard.agentImage" -}}
{{- $repository := dig "image" "repository" "" .Values.agent | default "shmguard-agent" -}}
{{- $tag := dig "image" "tag" "" .Values.agent | default .Values.image.tag | default .Chart.AppVersion -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}

{{/* The agent's leaked-segments mode: status, exact or off (chart 0.1.0's true and false read as
exact and off). Deleting them (reclaimLeakedSegments) needs exact. */}}
{{- define "shmguard.leakMode" -}}
{{- $mode := toString .Values.agent.leakedSegments -}}
{{- $mode = (dict "true" "exact" "false" "off") | dig $mode $mode -}}
{{- if and .Values.agent.reclaimLeakedSegments (ne $mode "exact") -}}
{{- fail (printf "agent.reclaimLeakedSegments needs agent.leakedSegments: exact (deleting leaked segments is safe only when the pod's processes are read), not %s" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{- define "shmguard.agentNamespace" -}}
{{- default .Release.Namespace .Values.agent.namespace -}}
{{- end -}}

{{- define "shmguard.labels" -}}
{{ include "shmguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret whose ca.crt is the client CA of mutual TLS: the one named, else the API
server's client certificate cert-manager issues (certificate.yaml). */}}
{{- define "shmguard.clientCaSecret" -}}
{{- if .Values.webhook.clientAuth.caSecretName -}}
{{- .Values.webhook.clientAuth.caSecretName -}}
{{- else if .Values.certManager.enabled -}}
{{- printf "%s-apiserver-client" (include "shmguard.fullname" .) -}}
{{- else -}}
{{- fail "webhook.clientAuth.enabled needs webhook.clientAuth.caSecretName, or certManager.enabled to make the client CA" -}}
{{- end -}}
{{- end -}}

{{- define "shmguard.tlsSecret" -}}
{{- default (printf "%s-tls" (include "shmguard.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{/* The parts every webhook entry shares: service, rules, matchConditions. Arguments: the root
context, the route (/mutate, /validate, or /validate/enforce: denials as under a policy rule
`mode: enforce`), the namespace Pod Security level it serves ("" for
privileged namespaces, else baseline or restricted: the path /FACE/pod-security/LEVEL, since the
API server takes no query string in service.path), and optionally "validate-only": only the
kinds the mutating webhook never sees (KubeRay's, TrainJob, KServe's). */}}
{{- define "shmguard.webhookCommon" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
{{- $level := index . 2 -}}
{{- $validateOnly := and (gt (len .) 3) (eq (index . 3) "validate-only") -}}
{{- /* A namespaceSelector never skips a cluster-scoped object, so those kinds go to the one
entry of each face that serves privileged, unenforced namespaces; the policy's "*" rule then
decides for them. */ -}}
{{- $clusterScoped := and (not $level) (ne $path "/validate/enforce") -}}
admissionReviewVersions: [v1]
sideEffects: None
timeoutSeconds: {{ $root.Values.webhook.timeoutSeconds }}
matchPolicy: Equivalent
clientConfig:
  service:
    name: {{ include "shmguard.fullname" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ $path }}{{ if $level }}/pod-security/{{ $level }}{{ end }}
    port: 443
  {{- if not $root.Values.certManager.enabled }}
  caBundle: {{ required "tls.caBundle is required when certManager.enabled is false" $root.Values.tls.caBundle }}
  {{- end }}
rules:
  {{- if not $validateOnly }}
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
    scope: Namespaced
  - apiGroups: [batch]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [jobs, cronjobs]
    scope: Namespaced
  - apiGroups: [apps]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [deployments, statefulsets]
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
  {{- if $clusterScoped }}
  - apiGroups: [trainer.kubeflow.org]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [clustertrainingruntimes]
    scope: Cluster
  {{- end }}
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
  {{- if $clusterScoped }}
  - apiGroups: [argoproj.io]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [clusterworkflowtemplates]
    scope: Cluster
  {{- end }}
  {{- end }}
  {{- if hasPrefix "/validate" $path }}
  {{- /* A resize of a running pod (its containers' resources in place, or the pod's) against
  the /dev/shm it has: docs/checks.md#resize-below-shm. */}}
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [UPDATE]
    resources: [pods/resize]
    scope: Namespaced
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
  - apiGroups: [serving.kserve.io]
    apiVersions: [v1beta1]
    operations: [CREATE]
    resources: [inferenceservices]
    scope: Namespaced
  - apiGroups: [serving.kserve.io]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [servingruntimes]
    scope: Namespaced
  - apiGroups: [serving.kserve.io]
    apiVersions: [v1alpha2]
    operations: [CREATE]
    resources: [llminferenceservices, llminferenceserviceconfigs]
    scope: Namespaced
  {{- if $clusterScoped }}
  - apiGroups: [serving.kserve.io]
    apiVersions: [v1alpha1]
    operations: [CREATE]
    resources: [clusterservingruntimes]
    scope: Cluster
  {{- end }}
  {{- end }}
objectSelector:
  matchExpressions:
    - key: app.kubernetes.io/name
      operator: NotIn
      values: [{{ include "shmguard.name" $root }}]
{{- if and $root.Values.webhook.gpuPodsOnly (semverCompare ">=1.28.0-0" $root.Capabilities.KubeVersion.Version) }}
matchConditions:
  - name: gpu-or-shmguard-pods
    expression: >-
      {{- include "shmguard.gpuPodExpression" $root | nindent 6 }}
{{- end }}
{{- end -}}

{{/* CEL (matchConditions, Kubernetes >= 1.28): a Pod reaches shmguard only when one of its
containers or init containers requests a GPU of the policy (limits or requests), it has resource
claims (GPUs through Dynamic Resource Allocation, which only the claims say), or it carries a
shmguard.io/ annotation; other kinds always do. The GPU names are the policy's own. */}}
{{- define "shmguard.gpuPodExpression" -}}
{{- $gpus := .Values.policy.gpuResources | toJson -}}
request.kind.kind != 'Pod' ||
(has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0) ||
(has(object.metadata.annotations) && object.metadata.annotations.exists(k, k.startsWith('shmguard.io/'))) ||
[has(object.spec.containers) ? object.spec.containers : [], has(object.spec.initContainers) ? object.spec.initContainers : []].exists(cs, cs.exists(c, has(c.resources) && ((has(c.resources.limits) && {{ $gpus }}.exists(g, g in c.resources.limits)) || (has(c.resources.requests) && {{ $gpus }}.exists(g, g in c.resources.requests)))))
{{- end -}}

{{/* Which namespaces an entry reaches. Arguments: the root context, the Pod Security level
("" for namespaces not labelled baseline or restricted) and the enforce label's role: "only"
(fail-closed validation), "exclude" (the other validation entry) or "" (mutation). */}}
{{- define "shmguard.namespaceSelector" -}}
{{- $root := index . 0 -}}
{{- $level := index . 1 -}}
{{- $enforce := index . 2 -}}
{{- $w := $root.Values.webhook -}}
{{- if or (eq $w.scope "labelled") (eq $enforce "only") }}
matchLabels:
  {{- if eq $w.scope "labelled" }}
  {{ $w.enabledLabel }}: "true"
  {{- end }}
  {{- if eq $enforce "only" }}
  {{ $w.enforceLabel }}: "true"
  {{- end }}
{{- end }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ append $w.excludedNamespaces $root.Release.Namespace | toJson }}
  {{- if eq $w.scope "cluster" }}
  - key: {{ $w.enabledLabel }}
    operator: NotIn
    values: ["false"]
  {{- end }}
  {{- if eq $enforce "exclude" }}
  - key: {{ $w.enforceLabel }}
    operator: NotIn
    values: ["true"]
  {{- end }}
  - key: {{ $w.podSecurityLabel }}
    {{- if $level }}
    operator: In
    values: [{{ $level }}]
    {{- else }}
    operator: NotIn
    values: [baseline, restricted]
    {{- end }}
{{- end -}}

{{/* The entry name for a face and level: mutate.shmguard.io, mutate-baseline.shmguard.io... */}}
{{- define "shmguard.entryName" -}}
{{- $base := index . 0 -}}
{{- $level := index . 1 -}}
{{- if $level }}{{ $base }}-{{ $level }}.shmguard.io{{ else }}{{ $base }}.shmguard.io{{ end -}}
{{- end -}}

{{- define "shmguard.caAnnotation" -}}
{{- if .Values.certManager.enabled }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "shmguard.fullname" . }}-serving-cert
{{- end }}
{{- end -}}
