{{- /* Helpers for the functions' RBAC (functions-rbac.yaml, karpenter.yaml). */ -}}

{{- /* Who the launch / bind / compact functions are in the cluster, for every role bound to them (the
functions' ClusterRole and Lease Role, the Karpenter ClusterRole): the group functionsRbac.group (an
EKS access entry maps the functions' IAM roles to it; template.yaml's FunctionsKubernetesGroup), the
ServiceAccount <release>-functions when functionsRbac.serviceAccount.create (its token goes into the
functions' kubeconfig: ACK, or KubeAccess=kubeconfig-secret), then functionsRbac.subjects. One list,
so no two bindings can disagree about who the functions are. JSON (a YAML flow sequence). */ -}}
{{- define "gpupool.functionSubjects" -}}
{{- $r := .Values.functionsRbac | default dict -}}
{{- $subjects := list (dict "apiGroup" "rbac.authorization.k8s.io" "kind" "Group" "name" ($r.group | default "gpupool")) -}}
{{- if ($r.serviceAccount | default dict).create -}}
{{- $subjects = append $subjects (dict "kind" "ServiceAccount" "name" (include "gpupool.functionsServiceAccount" .) "namespace" .Release.Namespace) -}}
{{- end -}}
{{- range ($r.subjects | default list) -}}
{{- $subjects = append $subjects . -}}
{{- end -}}
{{- toJson $subjects -}}
{{- end -}}

{{- /* The functions' ServiceAccount (functionsRbac.serviceAccount.create) and its token Secret. */ -}}
{{- define "gpupool.functionsServiceAccount" -}}
{{- printf "%s-functions" .Release.Name -}}
{{- end -}}
