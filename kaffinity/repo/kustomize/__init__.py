"""kustomize: an overlay built as ``kustomize build`` (else ``kubectl kustomize``) builds it, and
its objects mapped back to the files that define them (the resource file, the patch, or the
kustomization that generated them).
"""
