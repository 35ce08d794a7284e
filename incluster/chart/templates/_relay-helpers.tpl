{{- /* Helpers for the scheduler / relay templates. */ -}}

{{- /* The cluster version the chart renders for: scheduler.kubeVersion, else the API server's. */ -}}
{{- define "gpupool.kubeVersion" -}}
{{- $s := .Values.scheduler | default dict -}}
{{- regexFind "^v?[0-9]+\\.[0-9]+\\.[0-9]+" ($s.kubeVersion | default .Capabilities.KubeVersion.Version) | trimPrefix "v" -}}
{{- end -}}

{{- /* kube-scheduler at the cluster's own version: never newer than the API server, never more
than one minor older (the version-skew policy), unless scheduler.kubeSchedulerImage is set. A version
outside the chart's kubeVersion range is refused (Helm refuses such a cluster itself; only a renderer
that skips that check, or a scheduler.kubeVersion out of range, reaches this): no image is guessed. */ -}}
{{- define "gpupool.kubeSchedulerImage" -}}
{{- $s := .Values.scheduler | default dict -}}
{{- if $s.kubeSchedulerImage -}}
{{- $s.kubeSchedulerImage -}}
{{- else -}}
{{- $version := include "gpupool.kubeVersion" . -}}
{{- if not $version -}}
{{- fail "cannot read the cluster's Kubernetes version: set scheduler.kubeVersion (e.g. 1.33.4) or pin scheduler.kubeSchedulerImage" -}}
{{- end -}}
{{- if not (semverCompare .Chart.KubeVersion $version) -}}
{{- fail (printf "Kubernetes %s is outside this chart's kubeVersion %s: kube-scheduler must run the cluster's own version; render for a supported version (helm template --kube-version, or scheduler.kubeVersion) or pin scheduler.kubeSchedulerImage" $version .Chart.KubeVersion) -}}
{{- end -}}
{{- printf "registry.k8s.io/kube-scheduler:v%s" $version -}}
{{- end -}}
{{- end -}}

{{- /* The gpupool image (relay and node agent): image.repository at image.tag, default the chart's
appVersion, as .github/workflows/release.yml publishes it. */ -}}
{{- define "gpupool.image" -}}
{{- $i := .Values.image | default dict -}}
{{- printf "%s:%s" ($i.repository | default "ghcr.io/gpupool/relay") ($i.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- /* The TLS pair the relay serves and the webhook trusts: given values, else the Secret already in
the cluster (so `helm upgrade` keeps it), else a new one; JSON of {crt, key, ca} (PEM). Computed once
per render and remembered in .Values, so the Secret, the webhook's caBundle and the pods' checksum
all see the same pair. */ -}}
{{- define "gpupool.tlsPair" -}}
{{- if not (hasKey .Values "gpupoolRenderedTLS") -}}
{{- $_ := set .Values "gpupoolRenderedTLS" (include "gpupool.tlsPairOnce" .) -}}
{{- end -}}
{{- get .Values "gpupoolRenderedTLS" -}}
{{- end -}}

{{- define "gpupool.tlsPairOnce" -}}
{{- $s := .Values.scheduler | default dict -}}
{{- $tls := $s.tls | default dict -}}
{{- $service := printf "%s-scheduler" .Release.Name -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" $service) -}}
{{- $data := (get ($existing | default dict) "data") | default dict -}}
{{- if and $tls.crt $tls.key $tls.ca -}}
{{- dict "crt" $tls.crt "key" $tls.key "ca" $tls.ca | toJson -}}
{{- else if and (get $data "tls.crt") (get $data "tls.key") (get $data "ca.crt") -}}
{{- dict "crt" (get $data "tls.crt" | b64dec) "key" (get $data "tls.key" | b64dec) "ca" (get $data "ca.crt" | b64dec) | toJson -}}
{{- else -}}
{{- $dns := list $service (printf "%s.%s" $service .Release.Namespace) (printf "%s.%s.svc" $service .Release.Namespace) -}}
{{- $authority := genCA "gpupool-scheduler-ca" 3650 -}}
{{- $pair := genSignedCert (printf "%s.%s.svc" $service .Release.Namespace) nil $dns 3650 $authority -}}
{{- dict "crt" $pair.Cert "key" $pair.Key "ca" $authority.Cert | toJson -}}
{{- end -}}
{{- end -}}

{{- /* The Secret holding the HMAC secret for --forward-auth hmac (empty when none). */ -}}
{{- define "gpupool.hmacSecretName" -}}
{{- $f := (.Values.scheduler | default dict).forward | default dict -}}
{{- if $f.hmacExistingSecret -}}{{ $f.hmacExistingSecret }}{{- else if $f.hmacSecret -}}{{ .Release.Name }}-relay-hmac{{- end -}}
{{- end -}}
