// Command grpcinterop is a grpc-go client (Debian's golang-google-grpc-dev 1.33, built in GOPATH mode with no
// module downloads) that calls our Rust server's grpctest.Test service (shell/grpc/tests/interop/grpctest.proto).
//
// Debian ships neither protoc nor a packaged protoc-gen-go binary, so instead of generated stubs the two
// messages are written by hand the way protoc-gen-go 1.3 generated them: structs with `protobuf:` field tags
// plus the proto.Message methods. golang/protobuf 1.3's table-driven codec marshals them from the tags, and
// calls go through grpc-go's real proto codec via ClientConn.Invoke / NewStream.
//
// Usage: grpcinterop HOST:PORT. Prints one line per check and a closing "N passed, N failed".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/golang/protobuf/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type EchoRequest struct {
	Payload     []byte `protobuf:"bytes,1,opt,name=payload,proto3" json:"payload,omitempty"`
	FailCode    int32  `protobuf:"varint,2,opt,name=fail_code,json=failCode,proto3" json:"fail_code,omitempty"`
	FailMessage string `protobuf:"bytes,3,opt,name=fail_message,json=failMessage,proto3" json:"fail_message,omitempty"`
	SleepMs     uint32 `protobuf:"varint,4,opt,name=sleep_ms,json=sleepMs,proto3" json:"sleep_ms,omitempty"`
	Count       uint32 `protobuf:"varint,5,opt,name=count,proto3" json:"count,omitempty"`
	ReplySize   uint32 `protobuf:"varint,6,opt,name=reply_size,json=replySize,proto3" json:"reply_size,omitempty"`
}

func (m *EchoRequest) Reset()         { *m = EchoRequest{} }
func (m *EchoRequest) String() string { return proto.CompactTextString(m) }
func (*EchoRequest) ProtoMessage()    {}

type EchoReply struct {
	Payload []byte `protobuf:"bytes,1,opt,name=payload,proto3" json:"payload,omitempty"`
	Index   uint32 `protobuf:"varint,2,opt,name=index,proto3" json:"index,omitempty"`
}

func (m *EchoReply) Reset()         { *m = EchoReply{} }
func (m *EchoReply) String() string { return proto.CompactTextString(m) }
func (*EchoReply) ProtoMessage()    {}

const (
	echo    = "/grpctest.Test/Echo"
	stream  = "/grpctest.Test/Stream"
	missing = "/grpctest.Test/Missing"
)

var passed, failed int

func check(name string, f func() error) {
	if err := f(); err != nil {
		failed++
		fmt.Printf("FAIL %s: %v\n", name, err)
		return
	}
	passed++
	fmt.Printf("PASS %s\n", name)
}

func expectCode(err error, want codes.Code, msg string) error {
	s, _ := status.FromError(err)
	if s.Code() != want {
		return fmt.Errorf("want %v, got %v (%q)", want, s.Code(), s.Message())
	}
	if msg != "" && s.Message() != msg {
		return fmt.Errorf("message %q != %q", s.Message(), msg)
	}
	return nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, os.Args[1], grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	defer conn.Close()

	check("unary echo with metadata", func() error {
		c := metadata.AppendToOutgoingContext(ctx, "x-user", "gopher", "x-blob-bin", string([]byte{0, 1, 0xfe, 0xff}))
		var header metadata.MD
		out := new(EchoReply)
		if err := conn.Invoke(c, echo, &EchoRequest{Payload: []byte("hello")}, out, grpc.Header(&header)); err != nil {
			return err
		}
		if string(out.Payload) != "hello" {
			return fmt.Errorf("payload %q", out.Payload)
		}
		if v := header.Get("x-user"); len(v) != 1 || v[0] != "gopher" {
			return fmt.Errorf("x-user %v", v)
		}
		if v := header.Get("x-blob-bin"); len(v) != 1 || v[0] != string([]byte{0, 1, 0xfe, 0xff}) {
			return fmt.Errorf("x-blob-bin %q", v)
		}
		return nil
	})

	check("error status with UTF-8 message", func() error {
		msg := "nope — ünïcödé 100% 🚀"
		err := conn.Invoke(ctx, echo, &EchoRequest{FailCode: int32(codes.PermissionDenied), FailMessage: msg}, new(EchoReply))
		return expectCode(err, codes.PermissionDenied, msg)
	})

	check("unknown method", func() error {
		return expectCode(conn.Invoke(ctx, missing, &EchoRequest{}, new(EchoReply)), codes.Unimplemented, "")
	})

	check("deadline", func() error {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := conn.Invoke(c, echo, &EchoRequest{SleepMs: 5000}, new(EchoReply))
		if time.Since(start) > 2*time.Second {
			return fmt.Errorf("took %v", time.Since(start))
		}
		return expectCode(err, codes.DeadlineExceeded, "")
	})

	check("server streaming", func() error {
		desc := &grpc.StreamDesc{StreamName: "Stream", ServerStreams: true}
		s, err := conn.NewStream(ctx, desc, stream)
		if err != nil {
			return err
		}
		if err := s.SendMsg(&EchoRequest{Count: 10, Payload: []byte("s")}); err != nil {
			return err
		}
		if err := s.CloseSend(); err != nil {
			return err
		}
		for i := uint32(0); ; i++ {
			m := new(EchoReply)
			err := s.RecvMsg(m)
			if err == io.EOF {
				if i != 10 {
					return fmt.Errorf("got %d messages", i)
				}
				return nil
			}
			if err != nil {
				return err
			}
			if m.Index != i {
				return fmt.Errorf("index %d != %d", m.Index, i)
			}
		}
	})

	check("large message", func() error {
		out := new(EchoReply)
		if err := conn.Invoke(ctx, echo, &EchoRequest{Payload: make([]byte, 3000000)}, out); err != nil {
			return err
		}
		if len(out.Payload) != 3000000 {
			return fmt.Errorf("len %d", len(out.Payload))
		}
		return nil
	})

	check("over-limit message", func() error {
		err := conn.Invoke(ctx, echo, &EchoRequest{Payload: make([]byte, 5*1024*1024)}, new(EchoReply))
		return expectCode(err, codes.ResourceExhausted, "")
	})

	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
