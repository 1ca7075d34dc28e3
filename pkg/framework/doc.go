// Package framework is the scheduling framework: the extension points a
// scheduling cycle runs (QueueSort, PreFilter, Filter, PreScore, Score,
// Reserve, Permit, Bind), the plugin registry, and the profiles that say
// which plugins run at each point, read from the --config-path file.
//
// A cycle schedules one job. PreFilter and Permit see the whole job, so a
// gang is placed all or nothing; Filter, Score, Reserve and Bind see one
// pod at a time.
package framework
