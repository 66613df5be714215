// Package redisconn reads REDIS_URL into the connection options asynq and
// go-redis take, for one Redis server, a Sentinel-watched master or a
// Redis Cluster (docs/deploy.md):
//
//	redis://[:password@]host:port[/db]            one server (rediss:// with TLS)
//	redis-sentinel://[:password@]host:port[,host:port…][/db]?master=NAME[&sentinel_password=P]
//	redis-cluster://[:password@]host:port[,host:port…]
//
// A Sentinel URL names the sentinels and the master they watch; the
// password is the master's. A Cluster URL names some of its nodes (the
// rest are found); a cluster has only database 0.
package redisconn

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Conn is a parsed REDIS_URL.
type Conn struct {
	// Opt is the asynq connection option (RedisClientOpt,
	// RedisFailoverClientOpt or RedisClusterClientOpt).
	Opt asynq.RedisConnOpt
}

// Parse reads a REDIS_URL.
func Parse(raw string) (Conn, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Conn{}, fmt.Errorf("not a URL")
	}
	password, _ := u.User.Password()
	if u.Host == "" {
		return Conn{}, fmt.Errorf("no host")
	}
	hosts := strings.Split(u.Host, ",")
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return Conn{}, fmt.Errorf("%q is not host:port", h)
		}
	}
	db := 0
	if p := strings.Trim(u.Path, "/"); p != "" {
		if db, err = strconv.Atoi(p); err != nil || db < 0 {
			return Conn{}, fmt.Errorf("the path must be a database number")
		}
	}
	switch u.Scheme {
	case "redis", "rediss":
		if len(hosts) != 1 {
			return Conn{}, fmt.Errorf("one host:port (several: redis-sentinel:// or redis-cluster://)")
		}
		opt := asynq.RedisClientOpt{Addr: u.Host, Password: password, DB: db}
		if u.Scheme == "rediss" {
			h, _, _ := net.SplitHostPort(u.Host)
			opt.TLSConfig = &tls.Config{ServerName: h}
		}
		return Conn{Opt: opt}, nil
	case "redis-sentinel":
		master := u.Query().Get("master")
		if master == "" {
			return Conn{}, fmt.Errorf("?master=NAME is required")
		}
		return Conn{Opt: asynq.RedisFailoverClientOpt{MasterName: master, SentinelAddrs: hosts, Password: password,
			SentinelPassword: u.Query().Get("sentinel_password"), DB: db}}, nil
	case "redis-cluster":
		if db != 0 {
			return Conn{}, fmt.Errorf("a cluster has only database 0")
		}
		return Conn{Opt: asynq.RedisClusterClientOpt{Addrs: hosts, Password: password}}, nil
	default:
		return Conn{}, fmt.Errorf("scheme %q (want redis, rediss, redis-sentinel or redis-cluster)", u.Scheme)
	}
}

// Client is a go-redis client for the same connection (the rate limiter,
// the readiness check); the caller closes it.
func (c Conn) Client() redis.UniversalClient {
	return c.Opt.MakeRedisClient().(redis.UniversalClient)
}
