package cluster

import "context"

func startContainers(ctx context.Context, s Spec) (Cluster, error) {
	return nil, &UnavailableError{Provider: ProviderTestcontainers, Reason: "todo"}
}
