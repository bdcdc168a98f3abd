package actor

// CLUSTER, ASKING, READONLY and READWRITE: Redis Cluster's commands, as a
// Redis 7.0 started with cluster-enabled no answers them. Cellar is never a
// cluster node (cluster-enabled is stored as no and cannot be changed), so
// every one of them is refused with Redis's text; they are in the table so
// that COMMAND COUNT, LIST, INFO and DOCS describe them as Redis does, and
// so that the generic checks (an unknown subcommand, a wrong arity) answer
// first, as in Redis.

var clusterCommands = registerCommands([]*Command{
	{Name: "cluster", Summary: "Redis Cluster's node commands (refused: Cellar is not a cluster node).", Subs: []*Command{
		{Name: "cluster|addslots", Summary: "Assigns hash slots to this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|addslotsrange", Summary: "Assigns ranges of hash slots to this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|bumpepoch", Summary: "Advances the cluster config epoch.", Handler: cmdClusterDisabled},
		{Name: "cluster|count-failure-reports", Summary: "Counts the failure reports about a node.", Handler: cmdClusterDisabled},
		{Name: "cluster|countkeysinslot", Summary: "Counts the keys in a hash slot.", Handler: cmdClusterDisabled},
		{Name: "cluster|delslots", Summary: "Takes hash slots away from this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|delslotsrange", Summary: "Takes ranges of hash slots away from this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|failover", Summary: "Makes a replica take over from its master.", Handler: cmdClusterDisabled},
		{Name: "cluster|flushslots", Summary: "Takes every hash slot away from this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|forget", Summary: "Removes a node from the node table.", Handler: cmdClusterDisabled},
		{Name: "cluster|getkeysinslot", Summary: "Returns key names in a hash slot.", Handler: cmdClusterDisabled},
		{Name: "cluster|help", Summary: "Lists the CLUSTER subcommands.", Handler: cmdClusterDisabled},
		{Name: "cluster|info", Summary: "Reports the cluster state.", Handler: cmdClusterDisabled},
		{Name: "cluster|keyslot", Summary: "Returns the hash slot of a key.", Handler: cmdClusterDisabled},
		{Name: "cluster|links", Summary: "Lists the cluster bus links.", Handler: cmdClusterDisabled},
		{Name: "cluster|meet", Summary: "Adds a node to the cluster.", Handler: cmdClusterDisabled},
		{Name: "cluster|myid", Summary: "Returns this node's id.", Handler: cmdClusterDisabled},
		{Name: "cluster|nodes", Summary: "Returns the cluster configuration of this node.", Handler: cmdClusterDisabled},
		{Name: "cluster|replicas", Summary: "Lists the replicas of a master.", Handler: cmdClusterDisabled},
		{Name: "cluster|replicate", Summary: "Makes this node a replica of a master.", Handler: cmdClusterDisabled},
		{Name: "cluster|reset", Summary: "Resets this node's cluster state.", Handler: cmdClusterDisabled},
		{Name: "cluster|saveconfig", Summary: "Saves the cluster configuration to disk.", Handler: cmdClusterDisabled},
		{Name: "cluster|set-config-epoch", Summary: "Sets this node's config epoch.", Handler: cmdClusterDisabled},
		{Name: "cluster|setslot", Summary: "Binds a hash slot to a node.", Handler: cmdClusterDisabled},
		{Name: "cluster|shards", Summary: "Returns the cluster's shards.", Handler: cmdClusterDisabled},
		{Name: "cluster|slaves", Summary: "Lists the replicas of a master (the old name of CLUSTER REPLICAS).", Handler: cmdClusterDisabled},
		{Name: "cluster|slots", Summary: "Returns the hash slots of the nodes.", Handler: cmdClusterDisabled},
	}},
	{Name: "asking", Summary: "Lets the next command reach an importing slot (refused: not a cluster node).", Handler: cmdClusterDisabled},
	{Name: "readonly", Summary: "Lets a cluster replica serve reads (refused: not a cluster node).", Handler: cmdClusterDisabled},
	{Name: "readwrite", Summary: "Ends READONLY (refused: not a cluster node).", Handler: cmdClusterDisabled},
})

// CLUSTER <subcommand> [...] | ASKING | READONLY | READWRITE
//
// Redis checks cluster_enabled before anything else, HELP included.
func cmdClusterDisabled(c *Ctx) error { return ErrClusterDisabled }
